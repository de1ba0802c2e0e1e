"""The broker runtime: wires config, storage, replication, ZooKeeper and listeners together.

Why one composition root: start-up and shutdown order matter and must be readable in one
place.  Start: load (and recover) logs -> bind listeners (so a port clash fails before we
register) -> ZooKeeper session (register, elect, read topics) -> serve.  Shutdown
(SIGTERM): hand leadership away (controlled shutdown) -> stop accepting -> stop
coordinating groups (parked joins are answered) -> stop replica fetchers (parked acks=all
produces answer NOT_LEADER_OR_FOLLOWER) -> let in-flight requests finish (parked fetches
are woken) -> close logs cleanly (clean-shutdown marker) -> deregister.  Budget: well
under 2 s after the hand-over.

It is also the :class:`~brokerd.coordination.zk.CoordinationEvents` sink: topic changes go
to the :class:`~brokerd.server.reconciler.Reconciler` (replica roles), whose callbacks let
the group coordinator follow the leadership of ``__consumer_offsets`` partitions; the
periodic chores live in :mod:`brokerd.server.housekeeping`.

Not thread-safe: the loop thread only (ZooKeeper threads post into it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from brokerd.config import BrokerConfig
from brokerd.coordination.zk import ZkCoordinator
from brokerd.coordination.znodes import (
    BrokerRegistration,
    ProducerIdBlock,
    TopicMetadata,
)
from brokerd.groups import GroupCoordinator
from brokerd.groups.partition_log import OFFSETS_TOPIC, ReplicaOffsetsLog
from brokerd.protocol import ErrorCode
from brokerd.replication.fetch_sessions import FetchSessionCache
from brokerd.replication.fetcher import Endpoint, FetcherManager
from brokerd.replication.manager import ReplicaManager
from brokerd.replication.partition import Partition
from brokerd.server.auth import SecurityState
from brokerd.server.client_certs import ClientCertificates
from brokerd.server.component_settings import fetch_settings, group_config, state_pusher
from brokerd.server.housekeeping import Housekeeper
from brokerd.server.internal_topics import LeadershipFollower
from brokerd.server.listener import Listener
from brokerd.server.live_configs import LiveBrokerConfigs
from brokerd.server.log_cleaning import CleanerLoop
from brokerd.server.log_dir_failure import LogDirFailureHandler
from brokerd.server.metadata_cache import MetadataCache
from brokerd.server.metering import BrokerMetering
from brokerd.server.metrics import BrokerProbe
from brokerd.server.producer_ids import ProducerIdAllocator
from brokerd.server.quotas import BrokerQuotaGlue
from brokerd.server.reconciler import Reconciler
from brokerd.server.txn_service import TransactionService
from brokerd.storage import LogConfig, LogManager
from brokerd.storage.file_cache import OPEN_FILES

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_S = 1.0


class Broker:
    """One broker process's state and lifecycle."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.default_log_config = LogConfig.from_props(config.log_defaults)
        self.cache = MetadataCache(config.broker_id)
        OPEN_FILES.resize(config.log_max_open_files)  # before any log opens a file
        self.log_manager = LogManager(list(config.log_dirs), self.default_log_config)
        fetchers = FetcherManager(fetch_settings(config), self._inter_broker_endpoint)
        self.replicas = ReplicaManager(config.broker_id, self.log_manager, fetchers,
                                       config.replica_lag_time_max_ms,
                                       is_live=lambda broker_id: broker_id in self.cache.brokers,
                                       delivered_state=self.cache.partition_state)
        # Fetch sessions (KIP-227) of followers and consumers, served by handlers.fetch.
        self.fetch_sessions = FetchSessionCache(
            config.max_incremental_fetch_session_cache_slots,
            config.min_incremental_fetch_session_eviction_ms)
        self.quotas = BrokerQuotaGlue()
        self.metering = BrokerMetering(self)
        self.probe = BrokerProbe(self.replicas.log_sizes, lambda: self.quotas.latest_metrics)
        self.security = SecurityState(config.super_users, config.max_connections_per_ip)
        self.client_certs = ClientCertificates(self.security, config.static_props)  # mTLS
        self.live_configs = LiveBrokerConfigs(self)
        self.listeners = [Listener(endpoint, self) for endpoint in config.listeners]
        self.coordinator: ZkCoordinator | None = None
        self.producer_ids = ProducerIdAllocator(self._allocate_producer_id_block)
        # Replayed to the log end: a new leader's high watermark lags (transactional offset
        # commits would otherwise miss their commit marker and stay pending for good).
        self.groups = GroupCoordinator(ReplicaOffsetsLog(self.replicas, read_to_log_end=True),
                                       group_config(config))
        self.reconciler = Reconciler(config.broker_id, self.cache, self.replicas,
                                     self.log_config_for)
        self._group_leadership = LeadershipFollower(
            OFFSETS_TOPIC, self.groups.config.num_partitions, self.groups, self.replicas)
        self.reconciler.on_applied.append(self._group_leadership.topic_applied)
        self.transactions = TransactionService(config, self.cache, self.replicas, self.groups,
                                               self.producer_ids, self.metering.marker_written)
        self.reconciler.on_applied.append(self.transactions.topic_applied)
        self.shutting_down = asyncio.Event()
        self._housekeeper = Housekeeper(self.quotas, self.replicas, self.log_manager,
                                        self.listeners, config.connections_max_idle_ms,
                                        config.log_retention_check_interval_ms)
        self._housekeeping: asyncio.Task[None] | None = None
        self._cleaner: CleanerLoop | None = None
        self._logs_loaded = False
        self._state_pusher = state_pusher(config, self._inter_broker_endpoint)

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
        self.coordinator.states.push = self._state_pusher.push
        self.replicas.on_log_dir_failure = LogDirFailureHandler.for_broker(
            self.log_manager, self.replicas, self.coordinator)
        await self.coordinator.start()
        await self.coordinator.watch_security(self.security, self.quotas)
        await self.coordinator.watch_revoked_certificates(self.client_certs.revoked_changed)
        await self.coordinator.barrier()
        await asyncio.sleep(0)  # let the posted topic/broker events run before serving
        await self.reconciler.settled()  # and the large topics' chunked reconciliations
        self.reconciler.warn_about_orphans(topic for topic, _ in self.log_manager.all_logs())
        if self.config.metrics_port is not None:
            self.probe.serve(self.config.metrics_port, self.config.metrics_bind_address)
        for listener in self.listeners:
            await listener.start_serving()
        self._housekeeping = loop.create_task(self._housekeeper.run())
        self.metering.start()
        if self.config.log_cleaner_enable:
            self._cleaner = CleanerLoop(self.log_manager, self.config.log_cleaner_backoff_ms / 1000,
                                        threads=self.live_configs.cleaner_threads)
            self.live_configs.on_cleaner_threads = self._cleaner.set_threads
            self._cleaner.start()
        log.info("broker %d serving on %s", self.config.broker_id,
                 ", ".join(endpoint.url for endpoint in self.config.listeners))

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
        self._group_leadership.cancel()
        self.reconciler.cancel()  # no log may be created while the logs close
        await self.groups.close()
        await self.transactions.close()
        await self.replicas.close()  # fetchers stop; parked acks=all answer NOT_LEADER
        self._state_pusher.close()
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

    async def _allocate_producer_id_block(self) -> ProducerIdBlock:
        assert self.coordinator is not None
        return await self.coordinator.allocate_producer_id_block()

    # ---- CoordinationEvents ----------------------------------------------------------

    def topic_changed(self, name: str, metadata: TopicMetadata | None) -> None:
        if not self.shutting_down.is_set():  # else the logs are closing; the next start
            self.reconciler.topic_changed(name, metadata)  # reads ZooKeeper afresh

    def brokers_changed(self, brokers: dict[int, BrokerRegistration]) -> None:
        self.cache.put_brokers(brokers)

    def broker_config_changed(self, default: dict[str, str], own: dict[str, str]) -> None:
        self.live_configs.changed(default, own)  # log defaults, throttles (live_configs)

    def _inter_broker_endpoint(self, broker_id: int) -> Endpoint | None:
        """(host, port) of a live broker's ``inter.broker.listener.name`` endpoint."""
        registration = self.cache.brokers.get(broker_id)
        return registration.endpoint(self.config.inter_broker_listener_name) if registration else None

    def controller_changed(self, controller_id: int) -> None:
        self.cache.put_controller(controller_id)

    # ---- helpers for handlers --------------------------------------------------------

    @property
    def cluster_id(self) -> str:
        return self.coordinator.cluster_id if self.coordinator is not None else ""

    def leader_partition(self, topic: str, partition: int, current_leader_epoch: int = -1
                         ) -> tuple[Partition | None, ErrorCode]:
        """The led partition a request addresses, or why none is (``Reconciler``'s)."""
        return self.reconciler.leader_partition(topic, partition, current_leader_epoch)

    def log_config_for(self, topic_config: dict[str, str]) -> LogConfig:
        """A topic's effective log config: broker defaults overridden by the topic's."""
        return self.default_log_config.with_overrides(topic_config)

