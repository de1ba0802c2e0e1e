"""CreateTopics writes every topic of a request before awaiting any topic's leaders."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from brokerd.protocol import ErrorCode, RequestHeader
from brokerd.server.handlers import create_topics
from brokerd.server.request import Request
from brokerd.storage import LogConfig


class _Cache:
    """Leaders appear only once every topic of the request has been written, as when a
    busy controller elects them after the last write."""

    def __init__(self, expected: set[str]) -> None:
        self.expected, self.written = expected, set[str]()
        self.brokers: dict[int, Any] = {}

    def topic(self, name: str) -> None:
        return None

    def live_broker_ids(self) -> list[int]:
        return [1]

    def has_leaders(self, name: str) -> bool:
        return self.written >= self.expected

    async def wait_until(self, predicate: Any, timeout: float) -> bool:
        deadline = asyncio.get_running_loop().time() + timeout
        while not predicate():
            if asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(0.01)
        return True


def _broker(cache: _Cache) -> Any:
    async def create_topic(name: str, *_: Any, **__: Any) -> None:
        await asyncio.sleep(0.01)  # the ZooKeeper write
        cache.written.add(name)

    config = SimpleNamespace(num_partitions=1, default_replication_factor=1, broker_id=1,
                             rack=None)
    return SimpleNamespace(cache=cache, config=config, default_log_config=LogConfig(),
                           log_config_for=lambda configs: LogConfig(),
                           coordinator=SimpleNamespace(create_topic=create_topic))


def test_every_topic_is_written_before_any_leader_is_awaited() -> None:
    names = [f"t{i}" for i in range(5)]
    body = {"validate_only": False, "timeout_ms": 1_000, "topics": [
        {"name": name, "num_partitions": -1, "replication_factor": -1, "assignments": [],
         "configs": []} for name in names]}
    request = Request(RequestHeader(19, 7, 1, "c"), body, SimpleNamespace())  # type: ignore[arg-type]
    response = asyncio.run(create_topics.handle(_broker(_Cache(set(names))), request))  # type: ignore[arg-type]
    # awaiting t0's leaders before writing t1 would time t0 out
    assert [(t["name"], t["error_code"]) for t in response["topics"]] == [
        (name, ErrorCode.NONE) for name in names]
