"""The set of partitions this broker hosts, keyed by (topic, partition).

Why a manager: the server must not create or drop logs on its own; leadership decisions
(today from ZooKeeper partition state, later from the controller's LeaderAndIsr) arrive
here as :meth:`become_leader` / :meth:`stop_replica`, and follower fetchers will be
started and stopped here too.  Depends on the storage layer only, never on ZooKeeper.

Not thread-safe: used from the asyncio loop thread only.
"""

from __future__ import annotations

import uuid

from brokerd.replication.partition import Partition
from brokerd.storage import LogConfig, LogManager


class ReplicaManager:
    """Owns the :class:`Partition` objects this broker leads."""

    def __init__(self, broker_id: int, log_manager: LogManager) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self._partitions: dict[tuple[str, int], Partition] = {}

    def get(self, topic: str, partition: int) -> Partition | None:
        return self._partitions.get((topic, partition))

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def become_leader(self, topic: str, partition: int, topic_id: uuid.UUID,
                      leader_epoch: int, config: LogConfig) -> Partition:
        """Lead ``topic-partition`` in ``leader_epoch``, opening or creating its log."""
        existing = self._partitions.get((topic, partition))
        if existing is not None:
            existing.become_leader(leader_epoch)
            return existing
        log = self.log_manager.get_or_create(topic, partition, config)
        hosted = Partition(topic, partition, topic_id, log, leader_epoch)
        self._partitions[(topic, partition)] = hosted
        return hosted

    def stop_replica(self, topic: str, partition: int, delete: bool) -> None:
        """Stop hosting a partition; ``delete`` removes its log (the topic was deleted)."""
        hosted = self._partitions.pop((topic, partition), None)
        if delete:
            if hosted is not None or self.log_manager.get(topic, partition) is not None:
                self.log_manager.delete(topic, partition)

    def update_config(self, topic: str, config: LogConfig) -> None:
        """Apply a changed topic config to every hosted partition of ``topic``."""
        for (name, _), hosted in self._partitions.items():
            if name == topic:
                hosted.log.update_config(config)
