"""The group handlers' own logic (no sockets, no ZooKeeper): FindCoordinator's answers,
JoinGroup's client host, and the broker coordinating exactly the offsets partitions it leads.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from brokerd.config import ConfigError, build_config
from brokerd.coordination.znodes import BrokerRegistration, PartitionState, TopicMetadata
from brokerd.groups import GroupConfig, GroupCoordinator
from brokerd.groups.partition_log import OFFSETS_TOPIC, OFFSETS_TOPIC_CONFIGS
from brokerd.protocol import ErrorCode, bodies
from brokerd.server import topic_admin
from brokerd.server.broker import Broker
from brokerd.server.component_settings import group_config
from brokerd.server.handlers import find_coordinator
from brokerd.server.handlers.join_group import client_host
from brokerd.server.metadata_cache import MetadataCache
from brokerd.server.topic_admin import AdminResult

OFFSETS_PARTITIONS = 4
REQUIRED = {"broker.id": "1", "listeners": "PLAINTEXT://127.0.0.1:0",
            "zookeeper.connect": "unused:2181", "log.dirs": "/nonexistent"}


def offsets_topic(leaders: dict[int, int]) -> TopicMetadata:
    """``__consumer_offsets`` with the given partition -> leader map (one replica each)."""
    return TopicMetadata(OFFSETS_TOPIC, uuid.UUID(int=7),
                         {p: (leader,) for p, leader in leaders.items()},
                         {p: PartitionState(leader, 0, (leader,)) for p, leader in leaders.items()},
                         dict(OFFSETS_TOPIC_CONFIGS))


class AppliedRecorder:
    """The reconciler as FindCoordinator sees it: records the topics it was waited on for."""

    def __init__(self) -> None:
        self.waited: list[str] = []

    async def applied(self, name: str, timeout: float) -> None:
        self.waited.append(name)


def fake_broker(leaders: dict[int, int] | None, live: dict[int, BrokerRegistration]
                ) -> Any:
    """Broker 1, as FindCoordinator sees it."""
    cache = MetadataCache(1)
    cache.put_brokers(live)
    if leaders is not None:
        cache.put_topic(OFFSETS_TOPIC, offsets_topic(leaders))
    groups = GroupCoordinator(SimpleNamespace(), GroupConfig(num_partitions=OFFSETS_PARTITIONS))
    return SimpleNamespace(cache=cache, groups=groups, reconciler=AppliedRecorder(),
                           config=SimpleNamespace(broker_id=1,
                                                  offsets_topic_replication_factor=1))


def request(version: int, body: dict[str, Any], listener: str = "PLAINTEXT") -> Any:
    return SimpleNamespace(version=version, body=body,
                           connection=SimpleNamespace(listener_name=listener))


TWO_LISTENERS = BrokerRegistration(2, "h2", 9092, ("PLAINTEXT://h2:9092",
                                                    "SASL_PLAINTEXT://h2:9192"))


def find(broker: Any, version: int, body: dict[str, Any], listener: str = "PLAINTEXT"
         ) -> bodies.FindCoordinatorResponse:
    return asyncio.run(find_coordinator.handle(broker, request(version, body, listener)))


def test_v3_names_the_leader_of_the_groups_offsets_partition_on_the_asked_listener() -> None:
    broker = fake_broker(dict.fromkeys(range(OFFSETS_PARTITIONS), 2), {2: TWO_LISTENERS})
    answer = find(broker, 3, {"key": "payments", "key_type": 0}, "SASL_PLAINTEXT")
    assert (answer["error_code"], answer["node_id"], answer["host"], answer["port"]) == (
        0, 2, "h2", 9192)


def test_naming_itself_waits_until_its_own_replicas_of_the_topic_are_applied() -> None:
    """Else the client's next request could meet NOT_COORDINATOR from a coordinator that
    has not heard it leads (a large topic is applied a slice at a time)."""
    leaders = {p: 1 if p % 2 else 2 for p in range(OFFSETS_PARTITIONS)}
    own = BrokerRegistration(1, "h1", 9091, ("PLAINTEXT://h1:9091",))
    broker = fake_broker(leaders, {1: own, 2: TWO_LISTENERS})
    keys = ["a", "b", "c", "d", "e"]
    answer = find(broker, 4, {"key_type": 0, "coordinator_keys": keys})
    named_itself = sum(c["node_id"] == 1 for c in answer["coordinators"])
    assert 0 < named_itself < len(keys)
    assert broker.reconciler.waited == [OFFSETS_TOPIC] * named_itself


def test_v4_answers_each_key_from_its_own_partitions_leader() -> None:
    leaders = {p: 2 if p % 2 else 3 for p in range(OFFSETS_PARTITIONS)}
    other = BrokerRegistration(3, "h3", 9093, ("PLAINTEXT://h3:9093",))
    broker = fake_broker(leaders, {2: TWO_LISTENERS, 3: other})
    keys = ["a", "b", "c", "d", "e"]
    answer = find(broker, 4, {"key_type": 0, "coordinator_keys": keys})
    expected = [leaders[broker.groups.partition_for(k)] for k in keys]
    assert [c["key"] for c in answer["coordinators"]] == keys
    assert [c["node_id"] for c in answer["coordinators"]] == expected
    assert {c["port"] for c in answer["coordinators"]} == {9092, 9093}


def test_dead_leader_or_missing_listener_is_coordinator_not_available() -> None:
    dead = fake_broker(dict.fromkeys(range(OFFSETS_PARTITIONS), 5), {2: TWO_LISTENERS})
    assert find(dead, 3, {"key": "g", "key_type": 0})["error_code"] == (
        ErrorCode.COORDINATOR_NOT_AVAILABLE)
    broker = fake_broker(dict.fromkeys(range(OFFSETS_PARTITIONS), 2), {2: TWO_LISTENERS})
    assert find(broker, 3, {"key": "g", "key_type": 0}, "SASL_SSL")["error_code"] == (
        ErrorCode.COORDINATOR_NOT_AVAILABLE)


def test_unknown_key_types_are_refused() -> None:
    """(Transaction keys, type 1: tests/integration/brokerd/test_transactions.py.)"""
    broker = fake_broker(dict.fromkeys(range(OFFSETS_PARTITIONS), 2), {2: TWO_LISTENERS})
    assert find(broker, 2, {"key": "g", "key_type": 9})["error_code"] == ErrorCode.INVALID_REQUEST


def test_first_request_creates_the_offsets_topic(monkeypatch: pytest.MonkeyPatch) -> None:
    broker = fake_broker(None, {2: TWO_LISTENERS})
    created: list[tuple[Any, ...]] = []

    async def create_topic(_broker: Any, name: str, partitions: int, replication: int,
                           configs: dict[str, str], timeout_s: float
                           ) -> tuple[AdminResult, dict[int, tuple[int, ...]]]:
        created.append((name, partitions, replication, configs))
        broker.cache.put_topic(name, offsets_topic(dict.fromkeys(range(partitions), 2)))
        return AdminResult(), {}

    monkeypatch.setattr(topic_admin, "create_topic", create_topic)
    assert find(broker, 0, {"key": "g"})["node_id"] == 2
    assert created == [(OFFSETS_TOPIC, OFFSETS_PARTITIONS, 1, OFFSETS_TOPIC_CONFIGS)]
    find(broker, 0, {"key": "g"})
    assert len(created) == 1  # exists now: never created twice


def test_failed_creation_is_coordinator_not_available(monkeypatch: pytest.MonkeyPatch) -> None:
    async def create_topic(*_args: Any, **_kwargs: Any) -> tuple[AdminResult, dict[int, Any]]:
        return AdminResult(ErrorCode.INVALID_REPLICATION_FACTOR, "need 3 brokers"), {}

    monkeypatch.setattr(topic_admin, "create_topic", create_topic)
    answer = find(fake_broker(None, {}), 1, {"key": "g", "key_type": 0})
    assert answer["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert "need 3 brokers" in (answer["error_message"] or "")


@pytest.mark.parametrize(("peer", "host"), [("10.1.2.3:50000", "/10.1.2.3"),
                                            ("::1:50000", "/::1"), ("unknown", "/unknown")])
def test_join_group_client_host_is_the_peer_ip_as_kafka_writes_it(peer: str, host: str) -> None:
    assert client_host(peer) == host


def test_group_settings_come_from_kafkas_broker_keys() -> None:
    defaults = group_config(build_config(REQUIRED))
    assert defaults == GroupConfig()  # Kafka's defaults, as GroupConfig states them
    config = group_config(build_config({
        **REQUIRED, "offsets.topic.num.partitions": "7", "group.min.session.timeout.ms": "100",
        "group.max.session.timeout.ms": "9000", "group.initial.rebalance.delay.ms": "0",
        "offsets.retention.minutes": "2"}))
    assert config == GroupConfig(num_partitions=7, min_session_timeout_ms=100,
                                 max_session_timeout_ms=9000, initial_rebalance_delay_ms=0,
                                 offsets_retention_ms=120_000)


@pytest.mark.parametrize("bad", [{"offsets.topic.num.partitions": "0"},
                                 {"offsets.topic.replication.factor": "0"},
                                 {"group.min.session.timeout.ms": "10000",
                                  "group.max.session.timeout.ms": "9000"}])
def test_unusable_group_settings_are_configuration_errors(bad: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        build_config({**REQUIRED, **bad})


def test_broker_coordinates_exactly_the_offsets_partitions_it_leads(tmp_path: Path) -> None:
    config = build_config({**REQUIRED, "log.dirs": str(tmp_path),
                           "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS)})

    async def scenario() -> list[list[int]]:
        broker = Broker(config)
        broker.log_manager.load()

        async def owned_after(leaders: dict[int, int]) -> list[int]:
            broker.topic_changed(OFFSETS_TOPIC, offsets_topic(leaders))
            for _ in range(20):  # the loads run as tasks
                await asyncio.sleep(0)
            return [p for p in range(OFFSETS_PARTITIONS) if broker.groups.owns(p)]

        seen = [await owned_after({0: 1, 1: 2, 2: 1, 3: 2}),
                await owned_after({0: 2, 1: 1, 2: 1, 3: 2})]
        broker.topic_changed(OFFSETS_TOPIC, None)  # deleted: nothing left to coordinate
        seen.append([p for p in range(OFFSETS_PARTITIONS) if broker.groups.owns(p)])
        await broker.groups.close()
        broker.log_manager.close()
        return seen

    assert asyncio.run(scenario()) == [[0, 2], [1, 2], []]
