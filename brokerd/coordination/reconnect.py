"""How a broker connects, and reconnects after losing its connection, to ZooKeeper."""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from brokerd.coordination.zk_handler import PollingHandler

RECONNECT_MAX_DELAY_S = 1.0
# How long a start-up or re-registration step waits for a lost connection to return:
# longer than a ZooKeeper leader election, within the start-up's own bound.
STEP_DEADLINE_S = 30.0


def reconnect_policy() -> KazooRetry:
    """Reconnect attempts forever, at most ``RECONNECT_MAX_DELAY_S`` apart.

    kazoo's default doubles its delay up to an hour: after a ZooKeeper outage of 20 s (a
    lost quorum) brokers tried again only 15-30 s later, by which time the re-formed
    ensemble had expired their sessions, so they lost their registrations and every
    leadership they held although they could have kept them (found by the fault suite's
    quorum-loss test).  ZooKeeper's own client, which Kafka uses, cycles through the hosts
    without growing delays; a one-second cap is close to that and keeps the connection
    attempts cheap."""
    return KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_jitter=0.1,
                      max_delay=RECONNECT_MAX_DELAY_S)


def until_reconnected() -> KazooRetry:
    """Runs a ZooKeeper step again when it meets a connection loss (or a session expiry),
    once the connection is back, for at most ``STEP_DEADLINE_S``: the steps of a start-up
    or of registering in a new session, which a one-second blip otherwise failed for good,
    where Kafka's ZooKeeperClient re-sends its requests after reconnecting.  A step run
    this way must be safe to repeat, including after its earlier run took effect with its
    answer lost."""
    return _repeating(STEP_DEADLINE_S, through_expiry=True)


def through_blips(deadline_s: float) -> KazooRetry:
    """Runs a write made for a client (a topic created, grown, deleted or reconfigured; a
    broker's config; a block of producer ids; an election or reassignment it asked the
    controller for) again when a blip cuts it short, for as long as its caller waits
    (``deadline_s``): Kafka's ZooKeeperClient re-sends such requests once reconnected, so
    a blip delays the answer instead of failing it.  Not across a session expiry, which
    fails it as in Kafka: the ZooKeeper thread is then the new session's, to register
    again.  The write must be safe to repeat, as :func:`until_reconnected`'s steps are."""
    return _repeating(deadline_s, through_expiry=False)


def _repeating(deadline_s: float, through_expiry: bool) -> KazooRetry:
    return KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_jitter=0.1,
                      max_delay=RECONNECT_MAX_DELAY_S, deadline=deadline_s,
                      ignore_expire=through_expiry)


def split_connect(connect: str) -> tuple[str, str]:
    """``h1:2181,h2:2181/chroot`` -> (hosts, "/chroot") (chroot "" when absent)."""
    hosts, slash, chroot = connect.partition("/")
    return hosts, (slash + chroot).rstrip("/")


def new_client(hosts: str, session_timeout_s: float) -> KazooClient:
    """A broker's kazoo client (not started): its own session, the reconnect policy above
    and the polling handler (``zk_handler``)."""
    return KazooClient(hosts=hosts, timeout=session_timeout_s,
                       connection_retry=reconnect_policy(), handler=PollingHandler())
