"""Leaders' ISR writes, collected and sent to ZooKeeper in pipelined batches.

Why batches: a leader of 1,000 partitions changes 1,000 ISRs at once (followers joining
after a restart, a follower falling behind), and one ZooKeeper thread doing a read and a
conditional write per partition in turn took over 10 s under load, so callers timed out.
Requests queue here (any thread); one task on the coordinator's ZooKeeper thread takes
the whole queue, sends every write, then collects every answer: one round trip per batch.

Each write is ``set_data(state, zk_version)``: it succeeds only while the node is at the
version the leader last saw, so a controller's intervening write wins and the leader gets
None (it then acts on the controller's state).  The controller epoch is kept as read; it
comes from the topic cache when that holds the same version (the usual case: the leader's
version came from that cache), else from a pipelined read.

A written state goes into the topic cache at once, and what changed to ``written``: the
write's own notification is then covered and not read back
(:mod:`brokerd.coordination.state_watch`), so this is how the leader's Metadata answers
and its broker's controller (advancing a reassignment) learn of the new ISR.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError

from brokerd.coordination import znodes
from brokerd.coordination.topic_cache import TopicCache
from brokerd.coordination.znodes import PartitionState


@dataclass
class IsrRequest:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    result: concurrent.futures.Future[PartitionState | None] = field(
        default_factory=concurrent.futures.Future)

    @property
    def path(self) -> str:
        return znodes.partition_state_path(self.topic, self.partition)

    def settle(self, state: PartitionState | None = None,
               exception: BaseException | None = None) -> None:
        """Complete the request unless it is already done (its caller may have timed
        out and cancelled it)."""
        if self.result.done():
            return
        if exception is not None:
            self.result.set_exception(exception)
        else:
            self.result.set_result(state)


class IsrWriter:
    """``submit`` from any thread; ``drain`` runs on the ZooKeeper thread only."""

    def __init__(self, client: KazooClient, cache: TopicCache,
                 schedule: Callable[[Callable[[], None]], None],
                 written: Callable[[dict[str, set[int]]], None]) -> None:
        """``written({topic: partitions})``: called on the ZooKeeper thread once a batch's
        successful writes are in the cache."""
        self._client = client
        self._cache = cache
        self._schedule = schedule
        self._written = written
        self._lock = threading.Lock()
        self._queue: list[IsrRequest] = []

    def submit(self, request: IsrRequest) -> None:
        """Queue ``request``; the first of a burst schedules the drain."""
        with self._lock:
            self._queue.append(request)
            first = len(self._queue) == 1
        if first:
            self._schedule(self.drain)

    def drain(self) -> None:
        with self._lock:
            batch, self._queue = self._queue, []
        try:
            self._write(batch)
        except Exception as exc:  # noqa: BLE001 - every caller must hear of it
            for request in batch:
                request.settle(exception=exc)

    def _write(self, batch: list[IsrRequest]) -> None:
        epochs = self._controller_epochs(batch)
        pending: list[tuple[IsrRequest, PartitionState, Any]] = []
        for request in batch:
            epoch = epochs.get(id(request))
            if epoch is None:
                request.settle(None)  # gone, or already at another version
                continue
            state = PartitionState(request.leader, request.leader_epoch, request.isr, epoch)
            pending.append((request, state, self._client.set_async(
                request.path, state.encode(), request.zk_version)))
        changed: dict[str, set[int]] = {}
        for request, state, result in pending:
            try:
                stat = result.get()
            except (BadVersionError, NoNodeError):
                request.settle(None)
                continue
            written = dataclasses.replace(state, zk_version=stat.version)
            self._cache.put_states(request.topic, {request.partition: written})
            changed.setdefault(request.topic, set()).add(request.partition)
            request.settle(written)
        if changed:
            self._written(changed)

    def _controller_epochs(self, batch: list[IsrRequest]) -> dict[int, int]:
        """Request id -> controller epoch of the state it expects (absent: the node is
        gone or not at the expected version, so the write would fail anyway)."""
        epochs: dict[int, int] = {}
        reads = []
        for request in batch:
            topic = self._cache.topics.get(request.topic)
            cached = topic.states.get(request.partition) if topic is not None else None
            if cached is not None and cached.zk_version == request.zk_version:
                epochs[id(request)] = cached.controller_epoch
            else:
                reads.append((request, self._client.get_async(request.path)))
        for request, result in reads:
            try:
                raw, stat = result.get()
            except NoNodeError:
                continue
            if stat.version == request.zk_version:
                epochs[id(request)] = PartitionState.decode(raw, stat.version).controller_epoch
        return epochs
