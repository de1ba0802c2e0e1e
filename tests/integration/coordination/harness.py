"""In-process fake brokers for controller tests: one ZkCoordinator per broker id against
the test's ZooKeeper chroot, each with a recording event sink (no broker processes)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from kazoo.client import KazooClient

from brokerd.coordination import znodes
from brokerd.coordination.zk import ZkCoordinator
from brokerd.coordination.znodes import BrokerRegistration, PartitionState, TopicMetadata


class Events:
    """Records what a coordinator posts to the loop; ``until`` awaits a condition on it."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicMetadata | None] = {}
        self.topic_posts = 0
        self.brokers: dict[int, BrokerRegistration] = {}
        self.controller = -1
        self.broker_config: dict[str, str] | None = None
        self.changed = asyncio.Event()

    def topic(self, name: str) -> TopicMetadata:
        """The topic's last posted metadata; fails the test if none was posted or it was
        deleted."""
        metadata = self.topics.get(name)
        assert metadata is not None, f"no metadata posted for topic {name!r}"
        return metadata

    def topic_changed(self, name: str, metadata: TopicMetadata | None) -> None:
        self.topics[name] = metadata
        self.topic_posts += 1
        self.changed.set()

    def brokers_changed(self, brokers: dict[int, BrokerRegistration]) -> None:
        self.brokers = brokers
        self.changed.set()

    def controller_changed(self, controller_id: int) -> None:
        self.controller = controller_id
        self.changed.set()

    def broker_config_changed(self, default: dict[str, str], own: dict[str, str]) -> None:
        self.broker_config = {**default, **own}
        self.changed.set()

    async def until(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        async def poll() -> None:
            while not predicate():
                self.changed.clear()
                await self.changed.wait()
        await asyncio.wait_for(poll(), timeout)


def registration(broker_id: int, rack: str | None = None) -> BrokerRegistration:
    port = 19000 + broker_id
    return BrokerRegistration(broker_id, "127.0.0.1", port, (f"PLAINTEXT://127.0.0.1:{port}",),
                              rack)


async def start_broker(connect: str, broker_id: int,
                       leader_rebalance_interval_s: float | None = None,
                       ) -> tuple[ZkCoordinator, Events]:
    events = Events()
    coordinator = ZkCoordinator(connect, registration(broker_id), events,
                                asyncio.get_running_loop(), session_timeout_s=4,
                                leader_rebalance_interval_s=leader_rebalance_interval_s)
    await coordinator.start()
    return coordinator, events


def read_state(zk: KazooClient, topic: str, partition: int) -> PartitionState:
    raw, stat = zk.get(znodes.partition_state_path(topic, partition))
    return PartitionState.decode(raw, stat.version)


def write_admin(zk: KazooClient, path: str, partitions: list[dict[str, object]]) -> None:
    zk.create(path, json.dumps({"version": 1, "partitions": partitions}).encode(),
              makepath=True)
