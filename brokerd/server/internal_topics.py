"""Coordinators that follow the leadership of an internal topic's partitions.

Kafka's group coordinator serves the groups of exactly the ``__consumer_offsets``
partitions its broker leads (and the transaction coordinator those of
``__transaction_state``): leading a partition means replaying it to rebuild state, losing
it means unloading.  This is that rule once, for any coordinator with the small
:class:`PartitionCoordinator` shape, driven by the reconciler's "roles applied" callback.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from brokerd.replication.manager import ReplicaManager

log = logging.getLogger(__name__)


class PartitionCoordinator(Protocol):
    """A coordinator whose state lives in one internal topic's partitions."""

    def owns(self, partition: int) -> bool: ...

    async def load_partition(self, partition: int) -> None: ...

    def unload_partition(self, partition: int) -> None: ...


class LeadershipFollower:
    """Loads the partitions of ``topic`` led here into ``coordinator``, unloads the rest."""

    def __init__(self, topic: str, num_partitions: int, coordinator: PartitionCoordinator,
                 replicas: ReplicaManager) -> None:
        self.topic = topic
        self.num_partitions = num_partitions
        self.coordinator = coordinator
        self.replicas = replicas
        self._loads: set[asyncio.Task[None]] = set()

    def topic_applied(self, name: str) -> None:
        """The reconciler's callback: re-read leadership when our topic changed."""
        if name == self.topic:
            self.follow()

    def follow(self) -> None:
        for partition in range(self.num_partitions):
            if self.replicas.leader(self.topic, partition) is None:
                self.coordinator.unload_partition(partition)
            elif not self.coordinator.owns(partition):
                load = asyncio.get_running_loop().create_task(self._load(partition))
                self._loads.add(load)
                load.add_done_callback(self._loads.discard)

    def cancel(self) -> None:
        """Stop loading (shutdown): the coordinator is about to close."""
        for load in self._loads:
            load.cancel()

    async def _load(self, partition: int) -> None:
        try:
            await self.coordinator.load_partition(partition)  # at once if already loaded
        except Exception:
            log.exception("cannot load %s-%d; its state stays unserved", self.topic, partition)
