"""What an API handler may use of its broker: the narrow view handlers are typed against.

Why a Protocol and not :class:`~brokerd.server.broker.Broker`: handlers should depend on
the services they call (the metadata cache, the hosted replicas, the group coordinator,
quotas, metering, ZooKeeper writes), not on the composition root that builds and stops
them, so a handler module never imports the broker and a test can hand it a small fake.
``Broker`` satisfies this structurally; mypy checks that where the dispatcher passes it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from brokerd.config import BrokerConfig
    from brokerd.coordination.zk import ZkCoordinator
    from brokerd.groups import GroupCoordinator
    from brokerd.protocol import ErrorCode
    from brokerd.replication.fetch_sessions import FetchSessionCache
    from brokerd.replication.manager import ReplicaManager
    from brokerd.replication.partition import Partition
    from brokerd.server.auth import SecurityState
    from brokerd.server.live_configs import LiveBrokerConfigs
    from brokerd.server.metadata_cache import MetadataCache
    from brokerd.server.metering import BrokerMetering
    from brokerd.server.metrics import BrokerProbe
    from brokerd.server.producer_ids import ProducerIdAllocator
    from brokerd.server.quotas import BrokerQuotaGlue
    from brokerd.server.reconciler import Reconciler
    from brokerd.server.txn_service import TransactionService
    from brokerd.storage import LogConfig


class HandlerContext(Protocol):
    """The broker as API handlers see it."""

    config: BrokerConfig
    default_log_config: LogConfig
    cache: MetadataCache
    replicas: ReplicaManager
    reconciler: Reconciler
    fetch_sessions: FetchSessionCache
    groups: GroupCoordinator
    transactions: TransactionService
    quotas: BrokerQuotaGlue
    metering: BrokerMetering
    probe: BrokerProbe
    security: SecurityState
    live_configs: LiveBrokerConfigs
    producer_ids: ProducerIdAllocator
    coordinator: ZkCoordinator | None
    shutting_down: asyncio.Event

    @property
    def cluster_id(self) -> str: ...

    def leader_partition(self, topic: str, partition: int, current_leader_epoch: int = -1
                         ) -> tuple[Partition | None, ErrorCode]: ...

    def log_config_for(self, topic_config: dict[str, str]) -> LogConfig: ...
