"""The controller's pushes: LeaderAndIsr requests carrying the partition states it just
wrote to ZooKeeper, to every other broker hosting a replica of them.

Why: see :mod:`brokerd.coordination.state_feed` (the receiving side).  Best effort by
design: ZooKeeper holds every state pushed here, and each receiver's watches re-read them
anyway, so a push that fails (connection refused, timeout, the broker restarting) is
dropped with a log line, never retried; the next push to that broker reconnects.

Up to :data:`IN_FLIGHT` requests in flight per target broker, each on a connection of
its own, each carrying at most :data:`MAX_PARTITIONS` partitions.  Why several: the
controller hands its writes on every ~2,000 states as ZooKeeper answers them, and with one
request in flight each chunk waited for the previous one's answer (the receiver's decode
and apply, and then the controller's busy loop noticing the answer): in the 30,000-
partition failover the receiver applied successive pushes 0.3-1.3 s apart, and the last
one ~1 s after the last state was written.  Receivers apply pushes by znode version, so
requests may overtake each other (:mod:`brokerd.coordination.state_feed`).  States written
while every connection is busy are gathered (a newer state of a partition replaces the
one waiting) and sent by the first connection to be answered.  Requests are written, and
answers read, by :mod:`brokerd.coordination.leader_and_isr_codec`.

Not thread-safe: the event loop's thread only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from itertools import islice

from brokerd.coordination import leader_and_isr_codec
from brokerd.coordination.leader_and_isr_codec import VERSION, Entry, PushRequest
from brokerd.coordination.state_feed import Written
from brokerd.protocol import ApiKey, ErrorCode, ProtocolError
from brokerd.replication.client import PLAINTEXT_LINK, InterBrokerConnection, InterBrokerLink

log = logging.getLogger(__name__)

# Partitions per request: one chunk of the controller's writes (writes.WRITTEN_CHUNK);
# ~45 bytes each on the wire, and a receiver decodes and applies one in tens of ms, so
# no request holds its event loop for long.
MAX_PARTITIONS = 2_000
# Requests (and connections) in flight per target broker.
IN_FLIGHT = 3
# (topic, partition) -> (topic id, state, replicas, adding, removing)
Pending = dict[tuple[str, int], Entry]
Resolve = Callable[[int], "tuple[str, int] | None"]


def targets(broker_id: int, written: Written) -> dict[int, Pending]:
    """What each other broker is sent: the written states of the partitions it hosts (the
    LeaderAndIsr rule; brokers hosting none learn from their watches)."""
    out: dict[int, Pending] = {}
    for metadata, states in written:
        for partition, state in states.items():
            replicas = metadata.replicas.get(partition, ())
            entry = (metadata.topic_id, state, replicas,
                     metadata.adding_replicas.get(partition, ()),
                     metadata.removing_replicas.get(partition, ()))
            for broker in replicas:
                if broker != broker_id:
                    out.setdefault(broker, {})[(metadata.name, partition)] = entry
    return out


def take(pending: Pending) -> Pending:
    """Removes and returns the first :data:`MAX_PARTITIONS` of ``pending`` (all of it when
    fewer) in the order they were written (a partition written again keeps its place).

    Why that order: the controller writes a failover's leader changes before the changes
    that only drop the dead broker from ISRs, and a producer waits for the former.  Taken
    in (topic, partition) order instead, the ISR-only states gathered while every
    connection was busy could go ahead of the leader changes of later topics.  Written
    order still keeps a topic's partitions together: the controller writes topic by topic."""
    if len(pending) <= MAX_PARTITIONS:
        taken = dict(pending)
        pending.clear()
        return taken
    return {key: pending.pop(key) for key in list(islice(pending, MAX_PARTITIONS))}


class StatePusher:
    """Sends :meth:`push`'s states to the brokers hosting them (see the module doc)."""

    def __init__(self, broker_id: int, resolve: Resolve, timeout_s: float,
                 link: InterBrokerLink = PLAINTEXT_LINK) -> None:
        """``resolve``: a live broker's inter-broker (host, port), None when not live."""
        self._broker_id = broker_id
        self._resolve = resolve
        self._timeout_s = timeout_s
        self._link = link
        self._pending: dict[int, Pending] = {}
        self._epoch = 0
        # broker -> slot -> the task sending on that slot's connection
        self._senders: dict[int, dict[int, asyncio.Task[None]]] = {}
        self._connections: dict[tuple[int, int], InterBrokerConnection] = {}
        self._failing: set[int] = set()  # brokers whose last push failed

    def push(self, controller_epoch: int, written: Written) -> None:
        """Queue ``written`` for the live brokers hosting it, and start senders on free
        slots, one per :data:`MAX_PARTITIONS` states pending.  A broker not registered is
        skipped before any request is built: in a failover the dead broker hosts a
        replica of every partition it led or followed, and building its requests (only
        to find no endpoint) cost the controller's loop as much as the live brokers' did."""
        self._epoch = max(self._epoch, controller_epoch)
        loop = asyncio.get_running_loop()
        for broker, pending in targets(self._broker_id, written).items():
            if self._resolve(broker) is None:
                continue  # not live: it reads everything when it registers again
            self._pending.setdefault(broker, {}).update(pending)
            senders = self._senders.setdefault(broker, {})
            requests = -(-len(self._pending[broker]) // MAX_PARTITIONS)
            for slot in [slot for slot in range(IN_FLIGHT) if slot not in senders][:requests]:
                senders[slot] = loop.create_task(self._send(broker, slot),
                                                 name=f"leader-and-isr-{broker}-{slot}")

    async def _send(self, broker: int, slot: int) -> None:
        """Send what is pending for ``broker`` on ``slot``'s connection until nothing is."""
        try:
            while self._pending.get(broker):
                await self._request(broker, slot, PushRequest(
                    self._broker_id, self._epoch, take(self._pending[broker])))
        finally:
            senders = self._senders.get(broker, {})
            senders.pop(slot, None)
            if not senders:
                self._senders.pop(broker, None)

    async def _request(self, broker: int, slot: int, body: PushRequest) -> None:
        connection = self._connections.get((broker, slot))
        try:
            if connection is None:
                endpoint = self._resolve(broker)
                if endpoint is None:
                    return  # not live: it reads everything when it registers again
                connection = await InterBrokerConnection.open(
                    endpoint[0], endpoint[1], f"broker-{self._broker_id}-controller",
                    self._timeout_s, self._link)
                self._connections[(broker, slot)] = connection
            response = await connection.request(ApiKey.LEADER_AND_ISR, VERSION, body,
                                                codec=leader_and_isr_codec)
        except (ConnectionError, OSError, ProtocolError) as exc:
            # INFO once per outage (a restarting broker refuses connections until it serves)
            level = logging.DEBUG if broker in self._failing else logging.INFO
            log.log(level, "LeaderAndIsr to broker %d failed (its watches catch up): %s",
                    broker, exc)
            self._failing.add(broker)
            self._drop((broker, slot))
            return
        self._failing.discard(broker)
        if response["error_code"] != ErrorCode.NONE:
            log.info("broker %d refused LeaderAndIsr: %s", broker,
                     ErrorCode(response["error_code"]).name)

    def _drop(self, key: tuple[int, int]) -> None:
        connection = self._connections.pop(key, None)
        if connection is not None:
            connection.close()

    def close(self) -> None:
        for senders in self._senders.values():
            for task in senders.values():
                task.cancel()
        for key in list(self._connections):
            self._drop(key)
