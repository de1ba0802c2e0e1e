"""The set of partition replicas this broker hosts, keyed by (topic, partition).

Why a manager: the server must not create or drop logs on its own; leadership decisions
(ZooKeeper partition state, written by the controller) arrive here as
:meth:`become_leader` / :meth:`become_follower` / :meth:`stop_replica`; follower fetchers
start and stop here; and leaders' ISR changes are proposed from here through the
:class:`~brokerd.replication.isr_store.IsrStore`, at most one write in flight per
partition (the next is proposed after it settles).  Depends on storage and protocol only,
never on ZooKeeper.

Not thread-safe: used from the asyncio loop thread only.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from brokerd.protocol import ErrorCode
from brokerd.replication.fetcher import FetcherManager, FetchSettings
from brokerd.replication.isr_store import IsrState, IsrStore
from brokerd.replication.leader_throttle import LeaderThrottle
from brokerd.replication.partition import Partition
from brokerd.storage import LogConfig, LogManager

log = logging.getLogger(__name__)

# After a rejected or failed ISR write, wait this long before proposing again: the fresh
# state usually arrives from ZooKeeper within milliseconds, and a ZooKeeper outage must
# not turn every follower fetch into a doomed write.
ISR_RETRY_MS = 500
# ISR writes in flight per broker: thousands of partitions changing at once (a broker
# lost) queue here rather than in ZooKeeper, where they would delay the controller's own
# failover writes; the store pipelines the ones in flight, so a batch this size costs
# about one round trip.
ISR_WRITES_IN_FLIGHT = 128
# A shrink check this much later than its 1 s period means the loop was blocked (e.g.
# creating thousands of logs): the followers' fetches may still wait unread in our
# sockets, so judging them now would evict replicas that are in fact caught up.
ISR_CHECK_STALL_MS = 1500


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


class ReplicaManager:
    """Owns the :class:`Partition` objects this broker hosts, leaders and followers."""

    def __init__(self, broker_id: int, log_manager: LogManager,
                 fetchers: FetcherManager | None = None, lag_time_max_ms: int = 30_000,
                 clock_ms: Callable[[], int] = _now_ms,
                 is_live: Callable[[int], bool] = lambda broker_id: True,
                 delivered_state: Callable[[str, int], IsrState | None] = lambda _t, _p: None
                 ) -> None:
        """``delivered_state``: the newest state of a partition delivered to this broker
        (pushed or read), which may be ahead of what its replica has applied yet."""
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.fetchers = fetchers or FetcherManager(FetchSettings(broker_id), lambda _: None)
        self.leader_throttle = LeaderThrottle()  # leader.replication.throttled.rate
        self.lag_time_max_ms = lag_time_max_ms
        self.isr_store: IsrStore | None = None
        self._delivered_state = delivered_state
        self._is_live = is_live
        self._clock_ms = clock_ms
        self._partitions: dict[tuple[str, int], Partition] = {}
        self._isr_writes: set[asyncio.Task[None]] = set()
        self._isr_retry_at_ms: dict[tuple[str, int], int] = {}
        self._isr_write_slots = asyncio.Semaphore(ISR_WRITES_IN_FLIGHT)
        self._last_isr_check_ms: int | None = None
        self._last_isr_scan_ms = -(2**62)  # never
        # Told of every failed write to a log directory (see Partition._log_dir_failed).
        self.on_log_dir_failure: Callable[[Path, OSError], None] = lambda _dir, _exc: None
        # Replicas whose log dir failed: no longer hosted, never re-created until restart.
        self.offline: set[tuple[str, int]] = set()

    def now_ms(self) -> int:
        """The clock follower fetch times are kept in (fetch sessions use it too)."""
        return self._clock_ms()

    def get(self, topic: str, partition: int) -> Partition | None:
        """The hosted replica, leader or follower."""
        return self._partitions.get((topic, partition))

    def leader(self, topic: str, partition: int) -> Partition | None:
        """The hosted replica if this broker leads it."""
        hosted = self._partitions.get((topic, partition))
        return hosted if hosted is not None and hosted.is_leader else None

    def leader_or_error(self, topic: str, partition: int,
                        exists: Callable[[str, int], bool]) -> tuple[Partition | None, ErrorCode]:
        """The partition led here, or why a request for it cannot be served here:
        KAFKA_STORAGE_ERROR (its log dir failed), UNKNOWN_TOPIC_OR_PARTITION (``exists``
        says no such partition) or NOT_LEADER_OR_FOLLOWER (another broker leads it, this
        one only follows it, or leadership has not reached us yet)."""
        hosted = self.leader(topic, partition)
        if hosted is not None:
            return hosted, ErrorCode.NONE
        if (topic, partition) in self.offline:
            return None, ErrorCode.KAFKA_STORAGE_ERROR
        if not exists(topic, partition):
            return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return None, ErrorCode.NOT_LEADER_OR_FOLLOWER

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def log_sizes(self) -> list[tuple[str, int, int]]:
        """(topic, partition, bytes on disk) of every hosted replica, for the metrics probe."""
        return [(p.topic, p.index, int(p.log.size_bytes)) for p in self._partitions.values()]

    def _hosted(self, topic: str, partition: int, topic_id: uuid.UUID,
                config: LogConfig) -> Partition:
        existing = self._partitions.get((topic, partition))
        if existing is not None:
            return existing
        log_ = self.log_manager.get_or_create(topic, partition, config)
        hosted = Partition(topic, partition, topic_id, log_, self.broker_id)
        hosted.on_log_dir_failure = self.on_log_dir_failure
        self._partitions[(topic, partition)] = hosted
        return hosted

    def become_leader(self, topic: str, partition: int, topic_id: uuid.UUID, leader_epoch: int,
                      config: LogConfig, isr: tuple[int, ...] | None = None,
                      replicas: tuple[int, ...] | None = None,
                      zk_version: int = -1, removing: tuple[int, ...] = ()) -> Partition:
        """Lead ``topic-partition`` in ``leader_epoch``, opening or creating its log.
        ``isr``/``replicas`` default to this broker alone (a single replica); ``removing``
        are replicas a reassignment is taking away (see :attr:`Partition.removing`)."""
        hosted = self._hosted(topic, partition, topic_id, config)
        self.fetchers.forget((topic, partition))
        if hosted.become_leader(leader_epoch, isr or (self.broker_id,),
                                replicas or (self.broker_id,), zk_version, self._clock_ms()):
            hosted.removing = removing
        return hosted

    def become_follower(self, topic: str, partition: int, topic_id: uuid.UUID,
                        leader_id: int, leader_epoch: int, config: LogConfig,
                        isr: tuple[int, ...], replicas: tuple[int, ...], zk_version: int,
                        throttled: bool = False) -> Partition:
        """Follow ``leader_id`` (-1: no leader yet, fetch nothing) in ``leader_epoch``; a
        new leader or epoch restarts fetching with truncation."""
        hosted = self._hosted(topic, partition, topic_id, config)
        restart = hosted.become_follower(leader_id, leader_epoch, replicas, isr, zk_version)
        if restart or (not hosted.is_leader
                       and not self.fetchers.fetching((topic, partition))):
            self.fetchers.follow(hosted, throttled)
        return hosted

    def stop_replica(self, topic: str, partition: int, delete: bool) -> None:
        """Stop hosting a partition; ``delete`` removes its log (topic deleted, or this
        broker is no longer one of its replicas)."""
        self.stop_replicas([(topic, partition)], delete)

    def stop_replicas(self, keys: list[tuple[str, int]], delete: bool) -> None:
        """Stop hosting ``keys``; ``delete`` removes their logs in one batch (a deleted
        topic's partitions: see ``LogManager.delete_many``)."""
        for key in keys:
            hosted = self._partitions.pop(key, None)
            self.fetchers.forget(key)
            self._isr_retry_at_ms.pop(key, None)
            if hosted is not None:
                hosted.stop()
        if delete:
            self.log_manager.delete_many(keys)

    def take_offline(self, keys: list[tuple[str, int]]) -> None:
        """Their log dir failed: stop hosting them (parked acks=all waits fail as
        leadership lost, fetchers stop) and refuse to host them again."""
        for topic, partition in keys:
            self.offline.add((topic, partition))
            self.stop_replica(topic, partition, delete=False)

    def update_config(self, topic: str, config: LogConfig) -> None:
        """Apply a changed topic config to every hosted partition of ``topic``."""
        for (name, _), hosted in self._partitions.items():
            if name == topic:
                hosted.log.update_config(config)

    # ---- leaders: follower fetches and ISR changes ---------------------------------

    def record_follower_fetch(self, hosted: Partition, replica_id: int,
                              fetch_offset: int) -> None:
        """A follower's fetch: its log end offset, maybe a higher high watermark, and an
        ISR expansion when it has caught up — only for a registered (live) broker, as in
        Kafka: a broker whose session expired still fetches until it notices, and adding
        it would fight the controller, which removes dead brokers from every ISR.  For
        the same reason a replica a reassignment is removing never rejoins.

        A fetch by an ISR member changes no ISR: shrinking is the periodic check's job
        (:meth:`check_isrs`), as in Kafka, whose fetch path only expands.  Checked on
        every fetch, the whole lag computation ran for every partition every follower
        named: 8 % of a new leader's loop in the 30,000-partition failover, where the
        surviving follower names thousands of partitions per fetch."""
        now_ms = self._clock_ms()
        hosted.record_follower_fetch(replica_id, fetch_offset, now_ms)
        if replica_id not in hosted.isr:
            self._maybe_change_isr(hosted, now_ms, replica_id)

    def check_isrs(self) -> None:
        """Periodic (ticks every second, scans every half lag time): propose shrinking
        the ISR of led partitions with lagging followers, and growing it by caught-up
        followers whose fetch sessions fetched them without naming them; skipped once
        after the loop stalled (``ISR_CHECK_STALL_MS``)."""
        now_ms = self._clock_ms()
        previous, self._last_isr_check_ms = self._last_isr_check_ms, now_ms
        if previous is not None and now_ms - previous > ISR_CHECK_STALL_MS:
            log.info("ISR check %d ms after the previous one: the loop stalled; "
                     "giving followers' queued fetches a round first", now_ms - previous)
            return
        # Kafka's isr-expiration period: half the lag time (1 s ticks with the tests'
        # 2 s, 15 s by default), so idle leaders cost little.
        if now_ms - self._last_isr_scan_ms < self.lag_time_max_ms // 2:
            return
        self._last_isr_scan_ms = now_ms
        for hosted in self._partitions.values():
            if hosted.is_leader and len(hosted.replicas) > 1:
                self._maybe_change_isr(hosted, now_ms)

    def _maybe_change_isr(self, hosted: Partition, now_ms: int,
                          fetched_by: int | None = None) -> None:
        """Propose the ISR change due, if any.  Replicas join only after a fetch (named,
        or implied by their fetch session: see :meth:`Partition.begin_isr_change`)."""
        key = (hosted.topic, hosted.index)
        if self.isr_store is None or now_ms < self._isr_retry_at_ms.get(key, 0):
            return

        def may_admit(replica: int) -> bool:
            return self._is_live(replica) and replica not in hosted.removing

        if fetched_by is not None and not may_admit(fetched_by):
            fetched_by = None
        isr = hosted.begin_isr_change(now_ms, self.lag_time_max_ms, fetched_by, may_admit,
                                      self._is_live)
        if isr is None:
            return
        delivered = self._delivered_state(hosted.topic, hosted.index)
        if delivered is not None and delivered.zk_version > hosted.zk_version:
            # A write at the replica's version could only be refused: a newer state (in a
            # failover, the controller's, which already dropped the dead broker) is on its
            # way through the reconciler.  Proposed anyway, the new leaders of the
            # 30,000-partition failover logged and queued 3,900-8,600 such shrinks.
            self._proposal_refused(hosted, hosted.leader_epoch, hosted.zk_version)
            return
        task = asyncio.get_running_loop().create_task(self._write_isr(self.isr_store, hosted,
                                                                      isr))
        self._isr_writes.add(task)
        task.add_done_callback(self._isr_writes.discard)

    async def _write_isr(self, store: IsrStore, hosted: Partition, isr: tuple[int, ...]) -> None:
        async with self._isr_write_slots:
            await self._write_isr_now(store, hosted, isr)

    async def _write_isr_now(self, store: IsrStore, hosted: Partition,
                             isr: tuple[int, ...]) -> None:
        epoch, version = hosted.leader_epoch, hosted.zk_version
        if hosted.proposed_isr != isr:
            return  # leadership moved while queued (the flag was reset with it)
        if hosted.isr == isr:  # the controller made the same change while this one queued
            hosted.isr_change_done(epoch, isr, version)
            return
        log.info("%s-%d: proposing ISR %s (was %s) in epoch %d", hosted.topic, hosted.index,
                 list(isr), list(hosted.isr), epoch)
        try:
            state = await store.update_isr(hosted.topic, hosted.index, epoch, isr, version)
        except Exception as exc:
            log.warning("%s-%d: ISR write failed (%r); retrying later", hosted.topic,
                        hosted.index, exc)
            state = None
        if state is None:
            self._proposal_refused(hosted, epoch, version)
        else:
            self._isr_retry_at_ms.pop((hosted.topic, hosted.index), None)
            hosted.isr_change_done(state.leader_epoch, tuple(state.isr), state.zk_version)

    def _proposal_refused(self, hosted: Partition, epoch: int, version: int) -> None:
        """Retry later, once the fresh state has arrived."""
        self._isr_retry_at_ms[(hosted.topic, hosted.index)] = self._clock_ms() + ISR_RETRY_MS
        hosted.isr_change_done(epoch, None, version)

    async def close(self) -> None:
        """Stop every fetcher and fail parked acks=all waits (leadership is going away)."""
        await self.fetchers.close()
        for task in list(self._isr_writes):
            task.cancel()
        for hosted in self._partitions.values():
            hosted.abandon_commit_waits()
