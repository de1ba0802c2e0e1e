"""The broker runtime: wires config, storage, replication, ZooKeeper and listeners together.

Why one composition root: start-up and shutdown order matter and must be readable in one
place.  Start: load (and recover) logs -> bind listeners (so a port clash fails before we
register) -> ZooKeeper session (register, elect, read topics) -> serve.  Shutdown
(SIGTERM): hand leadership away (controlled shutdown) -> stop accepting -> stop
coordinating groups (parked joins are answered) -> stop replica fetchers (parked acks=all
produces answer NOT_LEADER_OR_FOLLOWER) -> let in-flight requests finish (parked fetches
are woken) -> close logs cleanly (clean-shutdown marker) -> deregister.  Budget: well
under 2 s after the hand-over.

It is also the :class:`~brokerd.coordination.zk.CoordinationEvents` sink: ZooKeeper changes
land in the metadata cache and are reconciled into the replicas this broker hosts (leading
or following each), and the group coordinator follows the leadership of
``__consumer_offsets`` partitions.

Not thread-safe: the loop thread only (ZooKeeper threads post into it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable

from brokerd.config import BrokerConfig
from brokerd.coordination.zk import ZkCoordinator
from brokerd.coordination.znodes import (
    BrokerRegistration,
    PartitionState,
    ProducerIdBlock,
    TopicMetadata,
)
from brokerd.groups import GroupConfig, GroupCoordinator
from brokerd.groups.partition_log import OFFSETS_TOPIC, ReplicaOffsetsLog
from brokerd.protocol import ErrorCode
from brokerd.replication.fetch_sessions import FetchSessionCache
from brokerd.replication.fetcher import Endpoint, FetcherManager, FetchSettings
from brokerd.replication.manager import ReplicaManager
from brokerd.replication.partition import NO_LEADER, Partition
from brokerd.server.auth import SecurityState
from brokerd.server.handlers.common import endpoint_for
from brokerd.server.listener import Listener
from brokerd.server.log_cleaning import CleanerLoop
from brokerd.server.metadata_cache import MetadataCache
from brokerd.server.metering import BrokerMetering
from brokerd.server.metrics import BrokerProbe
from brokerd.server.producer_ids import ProducerIdAllocator
from brokerd.server.quotas import BrokerQuotaGlue
from brokerd.storage import LogConfig, LogManager

log = logging.getLogger(__name__)

HOUSEKEEPING_INTERVAL_S = 1.0
# Kafka's log.flush.offset.checkpoint.interval.ms default: recovery points every minute.
CHECKPOINT_INTERVAL_S = 60.0
# Kafka's log.retention.check.interval.ms default is 5 minutes; we check every 30 s because
# a check of an idle log is a handful of comparisons.
RETENTION_INTERVAL_S = 30.0
SHUTDOWN_GRACE_S = 1.0
THROTTLED_RATE_KEY = "follower.replication.throttled.rate"
# Partitions (or logs) handled between yields to the loop: each may cost milliseconds of
# file work (creating a log, fsyncing its leader-epoch checkpoint), so a chunk stays well
# under a follower's fetch wait.  Topics up to SYNC_RECONCILE_MAX partitions apply at once.
RECONCILE_CHUNK = 16
SYNC_RECONCILE_MAX = 64


class Broker:
    """One broker process's state and lifecycle."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.default_log_config = LogConfig.from_props(config.log_defaults)
        self.cache = MetadataCache(config.broker_id)
        self.log_manager = LogManager(list(config.log_dirs), self.default_log_config)
        fetchers = FetcherManager(FetchSettings(
            config.broker_id, config.replica_fetch_wait_max_ms, config.replica_fetch_max_bytes,
            config.replica_fetch_response_max_bytes, config.replica_socket_timeout_ms),
            self._inter_broker_endpoint)
        self.replicas = ReplicaManager(config.broker_id, self.log_manager, fetchers,
                                       config.replica_lag_time_max_ms,
                                       is_live=lambda broker_id: broker_id in self.cache.brokers)
        # Fetch sessions (KIP-227) of followers and consumers, served by handlers.fetch.
        self.fetch_sessions = FetchSessionCache(
            config.max_incremental_fetch_session_cache_slots,
            config.min_incremental_fetch_session_eviction_ms)
        self.quotas = BrokerQuotaGlue()
        self.metering = BrokerMetering(self)
        self.probe = BrokerProbe(self._log_sizes, lambda: self.quotas.latest_metrics)
        self.security = SecurityState(config.super_users, config.max_connections_per_ip)
        self.listeners = [Listener(endpoint, self) for endpoint in config.listeners]
        self.coordinator: ZkCoordinator | None = None
        self.producer_ids = ProducerIdAllocator(self._allocate_producer_id_block)
        self.groups = GroupCoordinator(ReplicaOffsetsLog(self.replicas), group_config(config))
        self._group_loads: set[asyncio.Task[None]] = set()
        # Partition state (and replica list) last applied to each hosted replica, and the
        # running chunked reconciliation of each large topic.
        self._applied: dict[tuple[str, int], tuple[PartitionState, tuple[int, ...]]] = {}
        self._reconciles: dict[str, asyncio.Task[None]] = {}
        self.shutting_down = asyncio.Event()
        self._housekeeping: asyncio.Task[None] | None = None
        self._cleaner: CleanerLoop | None = None
        self._logs_loaded = False

    # ---- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.log_manager.load)
        self._logs_loaded = True
        for listener in self.listeners:
            await listener.bind()
        advertised = self.config.advertised
        registration = BrokerRegistration(
            self.config.broker_id, advertised[0].host, advertised[0].port,
            tuple(endpoint.url for endpoint in advertised), self.config.rack,
            self.config.metrics_port if self.config.metrics_port is not None else -1)
        self.coordinator = ZkCoordinator(
            self.config.zookeeper_connect, registration, self, loop,
            session_timeout_s=self.config.zookeeper_session_timeout_ms / 1000,
            leader_rebalance_interval_s=(
                self.config.leader_imbalance_check_interval_seconds
                if self.config.auto_leader_rebalance_enable else None))
        self.replicas.isr_store = self.coordinator
        await self.coordinator.start()
        await self.coordinator.watch_security(self.security, self.quotas)
        await self.coordinator.barrier()
        await asyncio.sleep(0)  # let the posted topic/broker events run before serving
        while self._reconciles:  # and the large topics' chunked reconciliations finish
            await asyncio.gather(*self._reconciles.values(), return_exceptions=True)
        self._warn_about_orphans()
        if self.config.metrics_port is not None:
            self.probe.serve(self.config.metrics_port)
        for listener in self.listeners:
            await listener.start_serving()
        self._housekeeping = loop.create_task(self._housekeep())
        self.metering.start()
        if self.config.log_cleaner_enable:
            self._cleaner = CleanerLoop(self.log_manager, self.config.log_cleaner_backoff_ms / 1000)
            self._cleaner.start()
        log.info("broker %d serving on %s", self.config.broker_id,
                 ", ".join(endpoint.url for endpoint in self.config.listeners))

    def _warn_about_orphans(self) -> None:
        """Logs of topics ZooKeeper does not know (deleted while this broker was down) are
        kept, not deleted: a wrong chroot must never wipe a broker's data."""
        orphans = sorted({topic for topic, _ in self.log_manager.all_logs()
                          if self.cache.topic(topic) is None})
        if orphans:
            log.warning("log dirs hold partitions of topics unknown to ZooKeeper: %s",
                        ", ".join(orphans))

    async def stop(self) -> None:
        """Graceful shutdown; safe to call once after :meth:`start` (even a failed one)."""
        started = time.monotonic()
        await self._controlled_shutdown()
        self.shutting_down.set()
        if self._housekeeping is not None:
            self._housekeeping.cancel()
        for listener in self.listeners:
            listener.stop_accepting()
        # Unload the groups first: parked JoinGroup/SyncGroup requests are answered
        # NOT_COORDINATOR at once (clients rediscover the coordinator), so the drain below
        # never waits out a rebalance.
        for load in self._group_loads:
            load.cancel()
        for reconcile in self._reconciles.values():
            reconcile.cancel()  # no log may be created while the logs close
        await self.groups.close()
        await self.replicas.close()  # fetchers stop; parked acks=all answer NOT_LEADER
        drains = [c.drain() for listener in self.listeners for c in listener.connections]
        if drains:
            await asyncio.wait([asyncio.ensure_future(d) for d in drains],
                               timeout=SHUTDOWN_GRACE_S)
        for listener in self.listeners:
            listener.close_connections()
        await self.metering.close()  # after the last request, before the logs close
        if self._cleaner is not None:
            await self._cleaner.stop()  # no cleaning build may write after the logs close
        if self._logs_loaded:
            # Only a completed load may be closed cleanly: the clean-shutdown marker would
            # otherwise exempt never-recovered partitions from recovery at the next start.
            self.log_manager.close()
        if self.coordinator is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.coordinator.close(), timeout=SHUTDOWN_GRACE_S)
        self.probe.stop()
        log.info("broker %d stopped in %.2fs", self.config.broker_id, time.monotonic() - started)

    async def _controlled_shutdown(self) -> None:
        """``controlled.shutdown.enable``: the controller moves this broker's leaderships
        to other in-sync replicas (and drops it from every ISR) while it still serves, so
        clients and followers switch over without waiting for a session timeout.  Best
        effort: on failure we stop anyway and the controller fails the partitions over
        when the session ends."""
        if (not self.config.controlled_shutdown_enable or self.coordinator is None
                or self._housekeeping is None):  # a start that failed leads nothing
            return
        timeout_s = self.config.controlled_shutdown_timeout_ms / 1000
        # Stop following first: a leaving broker that kept fetching would be added back
        # to the ISRs the controller is removing it from (Kafka's KIP-841 rule).
        await self.replicas.fetchers.close()
        if not await self.coordinator.controlled_shutdown(timeout_s):
            log.warning("controlled shutdown incomplete (some leaderships had no other "
                        "in-sync replica, or no answer within %.1f s); stopping anyway",
                        timeout_s)

    async def _housekeep(self) -> None:
        """Quota metrics snapshot and flush by policy every second (the fsync in a worker
        thread, see ``Log.flush``), retention and checkpoints on slower cadences."""
        loop = asyncio.get_running_loop()
        last_checkpoint = last_retention = time.monotonic()
        while True:
            await asyncio.sleep(HOUSEKEEPING_INTERVAL_S)
            now = time.monotonic()
            now_ms = int(time.time() * 1000)
            try:
                self.quotas.refresh_metrics()
                self.replicas.check_isrs()
                for due in self.log_manager.logs_due_for_flush(now_ms):
                    await loop.run_in_executor(None, due.flush)
                if now - last_retention >= RETENTION_INTERVAL_S:
                    last_retention = now
                    self.log_manager.enforce_retention(now_ms)
                    self.log_manager.delete_expired_files(now_ms)
                idle_since = now - self.config.connections_max_idle_ms / 1000
                for listener in self.listeners:
                    listener.close_idle(idle_since)
                if now - last_checkpoint >= CHECKPOINT_INTERVAL_S:
                    last_checkpoint = now
                    await self._checkpoint()
            except Exception:
                log.exception("housekeeping failed; retrying next round")

    async def _checkpoint(self) -> None:
        """Producer-state snapshots a chunk of logs at a time (each may write and fsync a
        file: thousands in one go would stall the loop for seconds), then the checkpoint
        files.  A log deleted meanwhile is skipped."""
        for count, (key, log_) in enumerate(self.log_manager.all_logs().items(), 1):
            if self.log_manager.get(*key) is log_:
                log_.take_producer_snapshot()
            if count % RECONCILE_CHUNK == 0:
                await asyncio.sleep(0)
        self.log_manager.write_checkpoints()

    def _log_sizes(self) -> Iterable[tuple[str, int, int]]:
        return [(p.topic, p.index, int(p.log.size_bytes)) for p in self.replicas.partitions()]

    async def _allocate_producer_id_block(self) -> ProducerIdBlock:
        assert self.coordinator is not None
        return await self.coordinator.allocate_producer_id_block()

    # ---- CoordinationEvents ----------------------------------------------------------

    def topic_changed(self, name: str, metadata: TopicMetadata | None) -> None:
        if self.shutting_down.is_set():
            return  # logs are closing; the next start reads ZooKeeper afresh
        previous = self.cache.topic(name)
        self.cache.put_topic(name, metadata)
        running = self._reconciles.pop(name, None)
        if running is not None:
            running.cancel()  # the fresh metadata supersedes it; _applied says what it did
        if metadata is None or (previous is not None
                                and previous.topic_id != metadata.topic_id):
            self._drop_topic(name)  # deleted, or deleted and created again
        if metadata is None:
            if name == OFFSETS_TOPIC:
                self._coordinate_led_offsets_partitions()
            return
        config = self.log_config_for(metadata.config)
        if previous is not None and previous.config != metadata.config:
            self.replicas.update_config(name, config)
        partitions = list(metadata.replicas)
        if len(partitions) <= SYNC_RECONCILE_MAX:
            for partition in partitions:
                self._reconcile(metadata, partition, config)
            if name == OFFSETS_TOPIC:
                self._coordinate_led_offsets_partitions()
            return
        task = asyncio.get_running_loop().create_task(
            self._reconcile_in_chunks(metadata, partitions, config))
        self._reconciles[name] = task
        task.add_done_callback(lambda done: self._reconcile_done(name, done))

    async def _reconcile_in_chunks(self, metadata: TopicMetadata, partitions: list[int],
                                   config: LogConfig) -> None:
        """A large topic's partitions a chunk at a time, yielding to the loop between
        chunks: creating a log costs milliseconds of file work, and a thousand of them in
        one go would stall every fetch (and so the ISRs) of this broker for seconds."""
        for start in range(0, len(partitions), RECONCILE_CHUNK):
            if start:
                await asyncio.sleep(0)
            for partition in partitions[start:start + RECONCILE_CHUNK]:
                self._reconcile(metadata, partition, config)
        if metadata.name == OFFSETS_TOPIC:
            self._coordinate_led_offsets_partitions()

    def _reconcile_done(self, name: str, task: asyncio.Task[None]) -> None:
        if self._reconciles.get(name) is task:
            del self._reconciles[name]
        if not task.cancelled() and task.exception() is not None:
            log.error("reconciling the replicas of %s failed", name,
                      exc_info=task.exception())

    def _drop_topic(self, name: str) -> None:
        for gone in self.replicas.partitions():
            if gone.topic == name:
                self._stop_replica(name, gone.index)

    def _stop_replica(self, name: str, partition: int) -> None:
        self.replicas.stop_replica(name, partition, delete=True)
        self._applied.pop((name, partition), None)

    def _reconcile(self, metadata: TopicMetadata, partition: int, config: LogConfig) -> None:
        """Make one partition's replica here match ZooKeeper: lead it, follow its leader,
        or (no longer a replica here) delete it.  State already applied costs two lookups,
        so a topic event over thousands of partitions stays cheap."""
        name, me = metadata.name, self.config.broker_id
        replicas = metadata.replicas[partition]
        hosted = self.replicas.get(name, partition)
        if me not in replicas:
            if hosted is not None:
                self._stop_replica(name, partition)
            return
        state = metadata.states.get(partition)
        if state is None:
            return  # no leadership decided yet
        throttled = me in metadata.adding_replicas.get(partition, ())
        if hosted is not None and self._applied.get((name, partition)) == (state, replicas):
            self.replicas.fetchers.set_throttled((name, partition), throttled)
            return
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

    def _coordinate_led_offsets_partitions(self) -> None:
        """Coordinate the groups of exactly the ``__consumer_offsets`` partitions hosted
        (led) here: start loading newly led ones, unload the rest.  Loading replays the
        partition, so a group's state follows its partition's leadership."""
        for partition in range(self.groups.config.num_partitions):
            if self.replicas.leader(OFFSETS_TOPIC, partition) is None:
                self.groups.unload_partition(partition)
            elif not self.groups.owns(partition):
                load = asyncio.get_running_loop().create_task(self._load_groups(partition))
                self._group_loads.add(load)
                load.add_done_callback(self._group_loads.discard)

    async def _load_groups(self, partition: int) -> None:
        try:
            await self.groups.load_partition(partition)  # returns at once if already loaded
        except Exception:
            log.exception("cannot load groups of %s-%d; its groups stay unserved",
                          OFFSETS_TOPIC, partition)

    def brokers_changed(self, brokers: dict[int, BrokerRegistration]) -> None:
        self.cache.put_brokers(brokers)

    def broker_config_changed(self, config: dict[str, str]) -> None:
        """Dynamic broker config: ``follower.replication.throttled.rate`` (bytes/s) caps the
        fetches of partitions this broker is being added to (reassignments)."""
        try:
            rate = float(config.get(THROTTLED_RATE_KEY, "0"))
        except ValueError:
            log.warning("ignoring %s=%r: not a number", THROTTLED_RATE_KEY,
                        config.get(THROTTLED_RATE_KEY))
            return
        self.replicas.fetchers.throttle.set_rate(rate, time.monotonic())

    def _inter_broker_endpoint(self, broker_id: int) -> Endpoint | None:
        """(host, port) of a live broker's ``inter.broker.listener.name`` endpoint."""
        registration = self.cache.brokers.get(broker_id)
        if registration is None:
            return None
        return endpoint_for(registration, self.config.inter_broker_listener_name)

    def controller_changed(self, controller_id: int) -> None:
        self.cache.put_controller(controller_id)

    # ---- helpers for handlers --------------------------------------------------------

    @property
    def cluster_id(self) -> str:
        return self.coordinator.cluster_id if self.coordinator is not None else ""

    def leader_partition(self, topic: str, partition: int) -> tuple[Partition | None, ErrorCode]:
        """The hosted partition a Produce/Fetch/ListOffsets addresses, or why it is not here:
        UNKNOWN_TOPIC_OR_PARTITION (no such partition) or NOT_LEADER_OR_FOLLOWER (another
        broker leads it, this broker only follows it, or leadership has not reached us
        yet)."""
        hosted = self.replicas.leader(topic, partition)
        if hosted is not None:
            return hosted, ErrorCode.NONE
        metadata = self.cache.topic(topic)
        if metadata is None or partition not in metadata.replicas:
            return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return None, ErrorCode.NOT_LEADER_OR_FOLLOWER

    def log_config_for(self, topic_config: dict[str, str]) -> LogConfig:
        """A topic's effective log config: broker defaults overridden by the topic's."""
        return self.default_log_config.with_overrides(topic_config)


def group_config(config: BrokerConfig) -> GroupConfig:
    """The group coordinator's settings from the broker's ``group.*``/``offsets.*`` keys."""
    return GroupConfig(
        num_partitions=config.offsets_topic_num_partitions,
        min_session_timeout_ms=config.group_min_session_timeout_ms,
        max_session_timeout_ms=config.group_max_session_timeout_ms,
        initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
        offsets_retention_ms=config.offsets_retention_minutes * 60_000,
    )
