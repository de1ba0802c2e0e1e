"""The controller's pushes: LeaderAndIsr requests carrying the partition states it just
wrote to ZooKeeper, to every other broker hosting a replica of them.

Why: see :mod:`brokerd.coordination.state_feed` (the receiving side).  Best effort by
design: ZooKeeper holds every state pushed here, and each receiver's watches re-read them
anyway, so a push that fails (connection refused, timeout, the broker restarting) is
dropped with a log line, never retried; the next push to that broker reconnects.

One connection and one request in flight per target broker.  States written while a
request is in flight are gathered (a newer state of a partition replaces the one waiting)
and sent together when it is answered, so a failover's batches cost a few requests, not
one per transaction.  A request carries at most :data:`MAX_PARTITIONS` partitions.

Not thread-safe: the event loop's thread only.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import Any

from brokerd.coordination.state_feed import Written
from brokerd.coordination.znodes import PartitionState
from brokerd.protocol import ApiKey, ErrorCode, ProtocolError
from brokerd.replication.client import PLAINTEXT_LINK, InterBrokerConnection, InterBrokerLink

log = logging.getLogger(__name__)

VERSION = 5
# Partitions per request: ~40 bytes each on the wire, so ~400 KB, far below any
# socket.request.max.bytes, and a receiver decodes and applies one in tens of ms.
MAX_PARTITIONS = 10_000
# (topic, partition) -> (topic id, state, replicas, adding, removing)
Pending = dict[tuple[str, int], tuple[uuid.UUID, PartitionState, tuple[int, ...],
                                      tuple[int, ...], tuple[int, ...]]]
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


def request_bodies(controller_id: int, controller_epoch: int, pending: Pending
                   ) -> list[dict[str, Any]]:
    """LeaderAndIsr v5 bodies for ``pending``, at most :data:`MAX_PARTITIONS` each."""
    items = sorted(pending.items())
    bodies = []
    for start in range(0, len(items), MAX_PARTITIONS):
        topics: dict[str, dict[str, Any]] = {}
        for (name, partition), (topic_id, state, replicas, adding, removing) in (
                items[start:start + MAX_PARTITIONS]):
            topic = topics.setdefault(name, {"topic_name": name, "topic_id": topic_id,
                                             "partition_states": []})
            topic["partition_states"].append({
                "partition_index": partition, "controller_epoch": state.controller_epoch,
                "leader": state.leader, "leader_epoch": state.leader_epoch,
                "isr": list(state.isr), "partition_epoch": state.zk_version,
                "replicas": list(replicas), "adding_replicas": list(adding),
                "removing_replicas": list(removing), "is_new": False})
        bodies.append({"controller_id": controller_id, "controller_epoch": controller_epoch,
                       "broker_epoch": -1, "type": 0, "topic_states": list(topics.values()),
                       "live_leaders": []})
    return bodies


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
        self._senders: dict[int, asyncio.Task[None]] = {}
        self._connections: dict[int, InterBrokerConnection] = {}
        self._failing: set[int] = set()  # brokers whose last push failed

    def push(self, controller_epoch: int, written: Written) -> None:
        """Queue ``written`` for the live brokers hosting it.  A broker not registered is
        skipped before any request is built: in a failover the dead broker hosts a
        replica of every partition it led or followed, and building its requests (only
        to find no endpoint) cost the controller's loop as much as the live brokers' did."""
        self._epoch = max(self._epoch, controller_epoch)
        for broker, pending in targets(self._broker_id, written).items():
            if self._resolve(broker) is None:
                continue  # not live: it reads everything when it registers again
            self._pending.setdefault(broker, {}).update(pending)
            if broker not in self._senders:
                self._senders[broker] = asyncio.get_running_loop().create_task(
                    self._send(broker), name=f"leader-and-isr-{broker}")

    async def _send(self, broker: int) -> None:
        try:
            while self._pending.get(broker):
                pending = self._pending.pop(broker)
                for body in request_bodies(self._broker_id, self._epoch, pending):
                    if not await self._request(broker, body):
                        break
        finally:
            self._senders.pop(broker, None)

    async def _request(self, broker: int, body: dict[str, Any]) -> bool:
        connection = self._connections.get(broker)
        try:
            if connection is None:
                endpoint = self._resolve(broker)
                if endpoint is None:
                    return False  # not live: it reads everything when it registers again
                connection = await InterBrokerConnection.open(
                    endpoint[0], endpoint[1], f"broker-{self._broker_id}-controller",
                    self._timeout_s, self._link)
                self._connections[broker] = connection
            response = await connection.request(ApiKey.LEADER_AND_ISR, VERSION, body)
        except (ConnectionError, OSError, ProtocolError) as exc:
            # INFO once per outage (a restarting broker refuses connections until it serves)
            level = logging.DEBUG if broker in self._failing else logging.INFO
            log.log(level, "LeaderAndIsr to broker %d failed (its watches catch up): %s",
                    broker, exc)
            self._failing.add(broker)
            self._drop(broker)
            return False
        self._failing.discard(broker)
        if response["error_code"] != ErrorCode.NONE:
            log.info("broker %d refused LeaderAndIsr: %s", broker,
                     ErrorCode(response["error_code"]).name)
        return True

    def _drop(self, broker: int) -> None:
        connection = self._connections.pop(broker, None)
        if connection is not None:
            connection.close()

    def close(self) -> None:
        for task in self._senders.values():
            task.cancel()
        for broker in list(self._connections):
            self._drop(broker)

