"""The writes request handlers ask of ZooKeeper: CreateTopics, CreatePartitions,
DeleteTopics, the config APIs, ElectLeaders, AlterPartitionReassignments, the ACL and
SCRAM admin APIs, and InitProducerId's producer-id blocks.

Each runs on the coordinator's one ZooKeeper thread (:class:`~.zk.ZkCoordinator`'s
``_run``) and, where it is safe to repeat, is repeated across a blip for as long as its
caller waits, as Kafka's ZooKeeperClient re-sends requests once reconnected
(:func:`.reconnect.through_blips`).  The ZooKeeper work itself is in :mod:`.writes`,
:mod:`.security_writes` and :mod:`.controller`; this is the async face the handlers call,
mixed into the coordinator so they keep one object to talk to.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from kazoo.client import KazooClient

from brokerd.coordination import security_writes, writes, znodes
from brokerd.coordination.controller import AlterOutcomes, Controller, ElectionOutcomes
from brokerd.coordination.zk_await import OPERATION_TIMEOUT_S
from brokerd.coordination.znodes import BrokerRegistration, TopicAssignment

T = TypeVar("T")


class ClientWrites:
    """The handlers' write API; :class:`~.zk.ZkCoordinator` provides what it runs on."""

    _client: KazooClient
    _controller: Controller
    _registration: BrokerRegistration

    async def _run(self, fn: Callable[..., T], *args: Any, timeout: float = OPERATION_TIMEOUT_S,
                   repeated: bool = False) -> T:
        raise NotImplementedError  # ZkCoordinator._run

    async def create_topic(self, name: str, replicas: dict[int, tuple[int, ...]],
                           config: dict[str, str], topic_id: uuid.UUID,
                           timeout: float = OPERATION_TIMEOUT_S) -> None:
        """Raises :class:`TopicExistsError` when ZooKeeper already has ``name``;
        ``timeout``: how long to wait for the write (it happens even if that runs out)."""
        await self._run(writes.create_topic, self._client, name,
                        TopicAssignment(topic_id, replicas), config, timeout=timeout, repeated=True)

    async def delete_topic(self, name: str) -> None:
        await self._run(writes.delete_topic, self._client, name, repeated=True)

    async def set_partitions(self, name: str, replicas: dict[int, tuple[int, ...]]) -> None:
        """Add partitions to a topic's assignment (CreatePartitions), keeping its id.
        Raises :class:`TopicNotFoundError`."""
        await self._run(writes.add_partitions, self._client, name, replicas, repeated=True)

    async def elect_leaders(self, unclean: bool, keys: list[writes.PartitionKey] | None,
                            timeout: float) -> ElectionOutcomes | None:
        """:meth:`Controller.elect_requested` on the ZooKeeper thread."""
        return await self._run(self._controller.elect_requested, unclean, keys, timeout,
                               timeout=timeout)

    async def alter_reassignments(self, targets: dict[writes.PartitionKey, tuple[int, ...] | None],
                                  keep_factor: bool) -> AlterOutcomes | None:
        """:meth:`Controller.alter_reassignments` on the ZooKeeper thread."""
        return await self._run(self._controller.alter_reassignments, targets, keep_factor,
                               OPERATION_TIMEOUT_S)

    async def set_topic_config(self, name: str, config: dict[str, str]) -> None:
        await self._run(writes.set_or_create, self._client, znodes.topic_config_path(name),
                        znodes.encode_topic_config(config), repeated=True)

    async def set_broker_config(self, entity: str, config: dict[str, str]) -> None:
        """Write ``/config/brokers/<entity>`` (an id or ``<default>``), announced as Kafka does."""
        await self._run(writes.set_config_and_notify, self._client,
                        znodes.broker_config_path(entity), znodes.encode_topic_config(config),
                        f"brokers/{entity}", repeated=True)

    async def update_security_node(self, path: str, change: security_writes.Change,
                                   notification_path: str, notification: bytes
                                   ) -> tuple[bytes | None, bytes | None]:
        """A conditional read-modify-write of an ACL or user config node plus its change
        notification (the admin APIs' writes, see :mod:`.security_writes`)."""
        return await self._run(security_writes.update_node, self._client, path, change,
                               notification_path, notification, OPERATION_TIMEOUT_S)

    async def allocate_producer_id_block(self) -> znodes.ProducerIdBlock:
        """Claim the next block of producer ids (a conditional update: unique cluster-wide;
        a repeat after a lost answer claims the next one, the lost block unused)."""
        return await self._run(writes.claim_producer_id_block, self._client,
                               self._registration.broker_id, repeated=True)
