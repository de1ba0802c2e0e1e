"""Reconciliation: make the replicas this broker hosts match the partition state ZooKeeper
holds (lead, follow, or delete each), as topic events arrive.

Why apart from the broker: this is the one place that turns cluster metadata into local
replica roles (Kafka's ``ReplicaManager.becomeLeaderOrFollower`` driven by LeaderAndIsr),
and it has its own rules: state already applied costs two lookups (and no share of a
slice), large topics apply a time slice at a time so one event over thousands of
partitions never stalls the loop, leadership changes before ISR-only ones, a partition a
request asks for ahead of its turn (:meth:`Reconciler.apply_now`), a newer event
supersedes a running chunked one, and a large deleted topic's logs go a slice at a time
too, before any topic created again under its name.  Coordinators of internal topics
(``__consumer_offsets``, ``__transaction_state``) follow the leadership it applies, slice
by slice, through :class:`~brokerd.server.internal_topics.LeadershipFollower` callbacks.

Not thread-safe: the loop thread only.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable, Iterable

from brokerd.coordination.znodes import PartitionState, TopicMetadata
from brokerd.protocol import ErrorCode
from brokerd.replication.manager import ReplicaManager
from brokerd.replication.partition import NO_LEADER, Partition
from brokerd.replication.rules import epoch_error
from brokerd.server.gc_pauses import freeze_new_objects
from brokerd.server.metadata_cache import MetadataCache
from brokerd.storage import LogConfig

log = logging.getLogger(__name__)

# Loop time a chunked reconciliation may take before it yields.  Each partition may cost
# about a millisecond of file work (creating its log), and every request waiting on this
# broker waits out a slice at each step of its way (produce, follower fetches, answer):
# with 16 partitions between yields, while another client created a 3,000-partition topic
# (RF 3, three brokers on 2 cores) an acks=all producer's delivery p99 was 573-981 ms;
# with 2 ms slices (and the burst's objects frozen, see gc_pauses) 173-490 ms.  Alone it
# is 5-12 ms.  Only topics up to SYNC_RECONCILE_MAX partitions apply at once: applying a
# 64-partition topic held each broker's loop for 130-250 ms in one go.  Coordinators of
# internal topics hear of what is applied after every slice, not once the whole topic is
# done: FindCoordinator answers from the metadata cache at once, so a coordinator that
# heard late answered NOT_COORDINATOR to clients it had just been named to.
# A slice also ends after RECONCILE_CHUNK partitions: in a failover, where no log is made
# and a partition costs tens of microseconds, 2 ms slices (~100 partitions) made the
# 30,000-partition kill -9 measure 11.8-11.9 s against 8.7-9.8 s with 16-partition chunks.
RECONCILE_SLICE_S = 0.002
RECONCILE_CHUNK = 16
SYNC_RECONCILE_MAX = 8

LeadershipApplied = Callable[[str], None]


class Applied(enum.Enum):
    """What reconciling one partition did: a partition whose state was already applied
    costs two lookups and does not count against a slice's RECONCILE_CHUNK (a topic event
    restarts its topic's reconciliation from the first partition: counted, every ISR
    change of a 3,000-partition topic being created cost 190 yields before any new
    partition was reached, and the creation took seconds longer than the lag time)."""

    UNCHANGED = enum.auto()
    ROLE = enum.auto()  # led or followed anew, or deleted
    CREATED = enum.auto()  # the replica (and its log) was made here


class _Slice:
    """A turn of the event loop's time: spent once RECONCILE_SLICE_S has passed, or once
    RECONCILE_CHUNK partitions did work in it."""

    def __init__(self) -> None:
        self.started, self.worked = time.perf_counter(), 0

    def spent(self, worked: bool) -> bool:
        self.worked += worked
        return (self.worked >= RECONCILE_CHUNK
                or time.perf_counter() - self.started >= RECONCILE_SLICE_S)


class Reconciler:
    """Applies topic events to the metadata cache and to this broker's replicas."""

    def __init__(self, broker_id: int, cache: MetadataCache, replicas: ReplicaManager,
                 log_config_for: Callable[[dict[str, str]], LogConfig]) -> None:
        self.broker_id = broker_id
        self.cache = cache
        self.replicas = replicas
        self.log_config_for = log_config_for
        # Called with a topic's name after each slice of its replicas' roles is applied
        # (or once the topic is gone): internal-topic coordinators re-read which
        # partitions this broker leads.
        self.on_applied: list[LeadershipApplied] = []
        # Partition state (and replica list) last applied to each hosted replica, the
        # running chunked reconciliation of each large topic, and the running deletion of
        # each large topic's logs (never cancelled by newer events: a topic created again
        # under the name waits for it, or would find the old logs) with the logs each
        # deletion has yet to delete.
        self._applied: dict[tuple[str, int], tuple[PartitionState, tuple[int, ...]]] = {}
        self._running: dict[str, asyncio.Task[None]] = {}
        self._deleting: dict[str, asyncio.Task[None]] = {}
        self._undeleted: dict[asyncio.Task[None], list[tuple[str, int]]] = {}

    def topic_changed(self, name: str, metadata: TopicMetadata | None) -> None:
        previous = self.cache.topic(name)
        self.cache.put_topic(name, metadata)
        running = self._running.pop(name, None)
        if running is not None:
            running.cancel()  # the fresh metadata supersedes it; _applied says what it did
        if metadata is None or (previous is not None
                                and previous.topic_id != metadata.topic_id):
            self._drop_topic(name)  # deleted, or deleted and created again
        if metadata is None:
            self._applied_to(name)
            return
        config = self.log_config_for(metadata.config)
        if previous is not None and previous.config != metadata.config:
            self.replicas.update_config(name, config)
        partitions = list(metadata.replicas)
        if len(partitions) <= SYNC_RECONCILE_MAX and name not in self._deleting:
            for partition in partitions:
                self._reconcile(metadata, partition, config)
            self._applied_to(name)
            return
        task = asyncio.get_running_loop().create_task(
            self._reconcile_in_chunks(metadata, partitions, config))
        self._running[name] = task
        task.add_done_callback(lambda done: self._chunks_done(self._running, name, done))

    def leader_partition(self, topic: str, partition: int, current_leader_epoch: int = -1
                         ) -> tuple[Partition | None, ErrorCode]:
        """The partition led here that a request addresses, or why none is
        (``ReplicaManager.leader_or_error``), after taking up its leadership if it was
        delivered but not applied yet (:meth:`apply_now`).

        A replica hosted here in another role answers as Kafka's does: the request's
        ``current_leader_epoch`` (-1: none named) is checked against the replica's first,
        so a client (or a new follower) ahead of this broker hears UNKNOWN_LEADER_EPOCH
        (retry: the new state is on its way here) and one behind hears
        FENCED_LEADER_EPOCH (refresh metadata); the same epoch, NOT_LEADER_OR_FOLLOWER."""
        found = self.replicas.leader_or_error(topic, partition, self.cache.has_partition)
        if found[1] is not ErrorCode.NOT_LEADER_OR_FOLLOWER:
            return found  # led here (every Produce and Fetch on the hot path), or unknown
        if self.apply_now(topic, partition):
            return self.replicas.leader_or_error(topic, partition, self.cache.has_partition)
        hosted = self.replicas.get(topic, partition)
        if hosted is None:
            return found
        return None, (epoch_error(current_leader_epoch, hosted.leader_epoch)
                      or ErrorCode.NOT_LEADER_OR_FOLLOWER)

    def apply_now(self, name: str, partition: int) -> bool:
        """Take up a leadership ahead of the topic's running reconciliation, for a request
        that found it delivered but not applied yet (Produce, Fetch, … would answer
        NOT_LEADER_OR_FOLLOWER otherwise); True when this broker now leads the partition.

        Why: a failover hands a broker thousands of leaderships at once and the
        reconciler takes them a slice at a time, so a partition in use waited behind idle
        ones: in the 30,000-partition failover the new leader took up its last
        leaderships 3-6 s after it held their states, refusing producers and its
        followers meanwhile.  Kafka applies a whole LeaderAndIsr request at once.

        Only a leadership of a replica hosted here (no log is made or deleted; no request
        needs this broker to follow, and a client with stale metadata asking a follower
        must not reorder the reconciler's work), and only while the topic's
        reconciliation runs (not while a deletion of the topic is pending)."""
        if name not in self._running:
            return False
        metadata = self.cache.topic(name)
        hosted = self.replicas.get(name, partition)
        if metadata is None or hosted is None:
            return False
        replicas, state = metadata.replicas.get(partition), metadata.states.get(partition)
        if (state is None or replicas is None or state.leader != self.broker_id
                or self.broker_id not in replicas
                or self._applied.get((name, partition)) == (state, replicas)):
            return False
        # The hosted log's config: no log is made here, and working the topic's config
        # out again for each of thousands of partitions cost a failover's new leader 3 %.
        applied = self._reconcile(metadata, partition, hosted.log.config)
        self._applied_to(name)
        return applied is not Applied.UNCHANGED

    async def settled(self) -> None:
        """Wait until no chunked reconciliation or deletion runs (start-up waits before
        serving)."""
        while self._running or self._deleting:
            await asyncio.gather(*self._running.values(), *self._deleting.values(),
                                 return_exceptions=True)

    async def applied(self, name: str, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds) until no reconciliation of ``name`` runs: a
        broker that names itself coordinator first lets its coordinator hear that it leads.
        Waits without cancelling the reconciliation if the caller is cancelled."""
        deadline = asyncio.get_running_loop().time() + timeout
        while (running := self._running.get(name)) is not None:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return
            await asyncio.wait({running}, timeout=remaining)

    def cancel(self) -> None:
        """Stop every running reconciliation (no log may be created while the logs close)
        and finish every running deletion at once: ZooKeeper no longer names the topic,
        so nothing would delete the logs not reached yet after a restart, and a tenant's
        deleted data must not outlive a broker restart."""
        for running in self._running.values():
            running.cancel()
        for deleting, undeleted in self._undeleted.items():
            deleting.cancel()
            try:
                self.replicas.log_manager.delete_many(undeleted)
            except OSError:
                log.exception("cannot delete %d logs of a deleted topic; they stay on disk",
                              len(undeleted))
        self._undeleted.clear()

    def warn_about_orphans(self, topics_on_disk: Iterable[str]) -> None:
        """Logs of topics ZooKeeper does not know (deleted while this broker was down) are
        kept, not deleted: a wrong chroot must never wipe a broker's data."""
        orphans = sorted({topic for topic in topics_on_disk if self.cache.topic(topic) is None})
        if orphans:
            log.warning("log dirs hold partitions of topics unknown to ZooKeeper: %s",
                        ", ".join(orphans))

    def _applied_to(self, name: str) -> None:
        for callback in self.on_applied:
            callback(name)

    async def _reconcile_in_chunks(self, metadata: TopicMetadata, partitions: list[int],
                                   config: LogConfig) -> None:
        deleting = self._deleting.get(metadata.name)
        if deleting is not None:  # the logs of a topic deleted under this name go first
            await asyncio.wait({deleting})
        turn, created = _Slice(), False
        for partition in self._leadership_first(metadata, partitions):
            applied = self._reconcile(metadata, partition, config)
            created = created or applied is Applied.CREATED
            if turn.spent(applied is not Applied.UNCHANGED):
                if created:
                    freeze_new_objects()  # the logs made live on: see gc_pauses
                self._applied_to(metadata.name)
                await asyncio.sleep(0)
                turn, created = _Slice(), False
        self._applied_to(metadata.name)

    def _leadership_first(self, metadata: TopicMetadata, partitions: list[int]) -> list[int]:
        """``partitions``, those whose leader or leader epoch differs from the one applied
        here (or never applied) first.  Why: in a failover every partition of a topic
        changes at once, a third of them their leadership and the rest only their ISR (the
        dead broker dropped), and a producer waits only for the former.  Taken in
        partition order, a survivor still answered its new followers
        NOT_LEADER_OR_FOLLOWER for the topics' last partitions 3.5 s after the controller
        had written them (30,000 partitions, `bench.density --phase partitions`)."""
        moved, rest = [], []
        for partition in partitions:
            applied = self._applied.get((metadata.name, partition))
            state = metadata.states.get(partition)
            if (applied is not None and state is not None
                    and applied[0].leader == state.leader
                    and applied[0].leader_epoch == state.leader_epoch):
                rest.append(partition)
            else:
                moved.append(partition)
        return moved + rest

    def _chunks_done(self, tasks: dict[str, asyncio.Task[None]], name: str,
                     task: asyncio.Task[None]) -> None:
        if tasks.get(name) is task:
            del tasks[name]
        if not task.cancelled() and task.exception() is not None:
            log.error("reconciling the replicas of %s failed", name,
                      exc_info=task.exception())

    def _drop_topic(self, name: str) -> None:
        """Serve the topic's replicas no more, at once; delete their logs at once too if
        they are few, else a slice at a time (3,000 logs held each broker's loop for
        0.3 s alone, and another tenant's acks=all p99 reached 1.1-1.3 s)."""
        gone = [(name, hosted.index) for hosted in self.replicas.partitions()
                if hosted.topic == name]
        self.replicas.stop_replicas(gone, delete=False)
        for key in gone:
            self._applied.pop(key, None)
        logs = self.replicas.log_manager
        earlier = self._deleting.get(name)
        if len(gone) <= SYNC_RECONCILE_MAX and earlier is None:
            logs.delete_many(gone)
            return
        task = asyncio.get_running_loop().create_task(self._delete_in_slices(gone, earlier))
        self._deleting[name] = task
        self._undeleted[task] = gone
        task.add_done_callback(lambda done: self._deletion_done(name, done))

    async def _delete_in_slices(self, undeleted: list[tuple[str, int]],
                                earlier: asyncio.Task[None] | None) -> None:
        """Delete the logs of ``undeleted``, taking each off the list as it goes."""
        if earlier is not None:  # deleted, created and deleted again: in order
            await asyncio.wait({earlier})
        logs, turn = self.replicas.log_manager, _Slice()
        while undeleted:
            if turn.spent(logs.begin_deletion(undeleted.pop())):
                await asyncio.sleep(0)
                turn = _Slice()
        logs.complete_deletions()

    def _deletion_done(self, name: str, task: asyncio.Task[None]) -> None:
        self._undeleted.pop(task, None)
        self._chunks_done(self._deleting, name, task)

    def _stop_replica(self, name: str, partition: int) -> None:
        self.replicas.stop_replica(name, partition, delete=True)
        self._applied.pop((name, partition), None)

    def _reconcile(self, metadata: TopicMetadata, partition: int, config: LogConfig
                   ) -> Applied:
        """Make one partition's replica here match ZooKeeper: lead it, follow its leader,
        or (no longer a replica here) delete it."""
        name, me = metadata.name, self.broker_id
        if (name, partition) in self.replicas.offline:
            return Applied.UNCHANGED  # its log dir failed: served elsewhere until restart
        replicas = metadata.replicas[partition]
        hosted = self.replicas.get(name, partition)
        if me not in replicas:
            if hosted is None:
                return Applied.UNCHANGED
            self._stop_replica(name, partition)
            return Applied.ROLE
        state = metadata.states.get(partition)
        if state is None:
            return Applied.UNCHANGED  # no leadership decided yet
        throttled = me in metadata.adding_replicas.get(partition, ())
        if hosted is not None and self._applied.get((name, partition)) == (state, replicas):
            self.replicas.fetchers.set_throttled((name, partition), throttled)
            return Applied.UNCHANGED
        self._applied[(name, partition)] = (state, replicas)
        if state.leader == me:
            self.replicas.become_leader(name, partition, metadata.topic_id, state.leader_epoch,
                                        config, state.isr, replicas, state.zk_version,
                                        metadata.removing_replicas.get(partition, ()))
        else:
            leader = state.leader if state.leader >= 0 else NO_LEADER
            self.replicas.become_follower(name, partition, metadata.topic_id, leader,
                                          state.leader_epoch, config, state.isr, replicas,
                                          state.zk_version, throttled)
        return Applied.ROLE if hosted is not None else Applied.CREATED
