"""The registered brokers, read so that no registration change goes unseen.

Why not kazoo's ``ChildrenWatch``: it calls back only when the *list of names* under
``/brokers/ids`` differs from the last one it saw.  A broker restarted before its old
session expired deletes its stale registration and creates a new one at once
(``ZkCoordinator._register_sync``), so a watcher re-listing after the deletion often sees
the same names again and reports nothing; and a reader that lists the names, then reads a
registration the restarting broker deleted in between, drops that broker with no later
event to bring it back.  Both happened: in a chasing-kill test the controller and a
leader went on believing a restarted broker dead, so the election after the next kill
left it out of every ISR and the leader never admitted its fetches again (the
transaction coordinator then stalled on ``min.insync.replicas`` for ten minutes).

So this reads a *snapshot*: every registration with its broker epoch (the czxid of its
znode, Kafka's broker epoch, KIP-380), listing again whenever a registration vanished
while being read, and it calls back on every watch event, changed names or not.  The
epochs tell the controller which brokers *bounced* (re-registered under the same id
since its last look), which Kafka treats as a failure followed by a start-up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from brokerd.coordination import znodes
from brokerd.coordination.znodes import BrokerRegistration


@dataclass(frozen=True)
class LiveBroker:
    registration: BrokerRegistration
    epoch: int  # czxid of the registration znode: a new one on every (re-)registration


def read_live_brokers(client: KazooClient, watch: Callable[[Any], None] | None = None
                      ) -> dict[int, LiveBroker]:
    """Every registration under ``/brokers/ids`` (arming ``watch`` on the list), retried
    until no registration vanished between the listing and its read."""
    while True:
        children = client.get_children(znodes.BROKER_IDS, watch=watch)
        brokers: dict[int, LiveBroker] = {}
        vanished = False
        for child in children:
            try:
                data, stat = client.get(f"{znodes.BROKER_IDS}/{child}")
            except NoNodeError:
                vanished = True
                break
            try:
                broker_id = int(child)
                registration = BrokerRegistration.decode(broker_id, data)
            except ValueError:
                continue  # not a broker registration (Kafka skips such nodes too)
            brokers[broker_id] = LiveBroker(registration, stat.czxid)
        if not vanished:
            return brokers


def bounced(previous: dict[int, LiveBroker], current: dict[int, LiveBroker]) -> set[int]:
    """Brokers registered in both snapshots under a different epoch: restarted between
    the two looks (Kafka's ``bouncedBrokerIds``)."""
    return {broker for broker, live in current.items()
            if broker in previous and previous[broker].epoch != live.epoch}
