"""Pure parts of the handlers and of topic administration."""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace
from typing import Any

import pytest

from brokerd.coordination.znodes import BrokerRegistration, PartitionState, TopicMetadata
from brokerd.protocol import (
    SCHEMA_VERSIONS,
    ApiKey,
    ErrorCode,
    RequestHeader,
    bodies,
    encode_response,
)
from brokerd.replication.rules import epoch_error
from brokerd.server.handlers import API_TABLE, api_versions, describe_cluster, metadata
from brokerd.server.handlers.incremental_alter_configs import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    apply_operations,
)
from brokerd.server.metadata_cache import MetadataCache
from brokerd.server.request import Request
from brokerd.server.topic_admin import plan_new_topic, validate_topic_name


def test_api_versions_advertises_exactly_the_required_table_within_the_codec() -> None:
    required = {
        ApiKey.API_VERSIONS: (0, 4), ApiKey.METADATA: (0, 12), ApiKey.PRODUCE: (0, 12),
        ApiKey.FETCH: (4, 12), ApiKey.LIST_OFFSETS: (1, 7), ApiKey.CREATE_TOPICS: (2, 7),
        ApiKey.DELETE_TOPICS: (1, 6), ApiKey.CREATE_PARTITIONS: (0, 3),
        ApiKey.DESCRIBE_CONFIGS: (1, 4), ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
        ApiKey.ALTER_CONFIGS: (0, 2),
        ApiKey.INIT_PRODUCER_ID: (0, 4), ApiKey.DESCRIBE_CLUSTER: (0, 1),
        ApiKey.DELETE_RECORDS: (0, 2), ApiKey.ELECT_LEADERS: (0, 2),
        ApiKey.DESCRIBE_LOG_DIRS: (1, 4), ApiKey.DESCRIBE_PRODUCERS: (0, 0),
        ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0), ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 1),
        ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
        ApiKey.FIND_COORDINATOR: (0, 6),
        ApiKey.JOIN_GROUP: (0, 9), ApiKey.SYNC_GROUP: (0, 5), ApiKey.HEARTBEAT: (0, 4),
        ApiKey.LEAVE_GROUP: (0, 5), ApiKey.OFFSET_COMMIT: (2, 9), ApiKey.OFFSET_FETCH: (1, 9),
        ApiKey.LIST_GROUPS: (0, 5), ApiKey.DESCRIBE_GROUPS: (0, 5), ApiKey.DELETE_GROUPS: (0, 2),
        ApiKey.OFFSET_DELETE: (0, 0), ApiKey.SASL_HANDSHAKE: (0, 1),
        ApiKey.SASL_AUTHENTICATE: (0, 2), ApiKey.OFFSET_FOR_LEADER_EPOCH: (2, 4),
        # Transactions (issue 14).
        ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5), ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
        ApiKey.END_TXN: (0, 5), ApiKey.WRITE_TXN_MARKERS: (1, 2),
        ApiKey.TXN_OFFSET_COMMIT: (0, 5), ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
        ApiKey.LIST_TRANSACTIONS: (0, 1),
        # ACL (KIP-140) and SCRAM (KIP-554) admin APIs (issue 15).
        ApiKey.CREATE_ACLS: (1, 3), ApiKey.DESCRIBE_ACLS: (1, 3), ApiKey.DELETE_ACLS: (1, 3),
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
        # KIP-848 consumer groups (issue 16).
        ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 1), ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 1),
        # The controller's pushed partition states (issue 13; Kafka 3.x's ZooKeeper mode).
        ApiKey.LEADER_AND_ISR: (5, 5),
    }
    body = api_versions.response_body()
    advertised = {e["api_key"]: (e["min_version"], e["max_version"]) for e in body["api_keys"]}
    assert advertised == required
    for key, (low, high) in advertised.items():
        codec_low, codec_high = SCHEMA_VERSIONS[ApiKey(key)]
        assert codec_low <= low and high <= codec_high
    assert set(API_TABLE) == set(required)


@pytest.mark.parametrize(("requested", "current", "expected"), [
    (-1, 5, ErrorCode.NONE), (5, 5, ErrorCode.NONE),
    (4, 5, ErrorCode.FENCED_LEADER_EPOCH), (6, 5, ErrorCode.UNKNOWN_LEADER_EPOCH)])
def test_epoch_error(requested: int, current: int, expected: ErrorCode) -> None:
    assert epoch_error(requested, current) == expected


def test_apply_operations() -> None:
    current = {"retention.ms": "1", "cleanup.policy": "delete"}
    ops: list[bodies.IncrementalAlterConfigsRequestConfig] = [
        {"name": "retention.ms", "config_operation": DELETE, "value": None},
        {"name": "cleanup.policy", "config_operation": APPEND, "value": "compact"},
        {"name": "segment.bytes", "config_operation": SET, "value": "2048"},
        {"name": "x.list", "config_operation": SUBTRACT, "value": "b"}]
    assert apply_operations(current, ops, {"x.list": "a,b,c"}) == {
        "cleanup.policy": "delete,compact", "segment.bytes": "2048", "x.list": "a,c"}
    with pytest.raises(ValueError):
        apply_operations({}, [{"name": "a", "config_operation": 9, "value": "1"}], {})


def test_registration_endpoint_picks_the_request_listener() -> None:
    registration = BrokerRegistration(1, "h", 9092, ("PLAINTEXT://h:9092", "SASL_SSL://s:9292"))
    assert registration.endpoint("SASL_SSL") == ("s", 9292)
    assert registration.endpoint("SSL") is None
    assert BrokerRegistration(2, "old", 1).endpoint("PLAINTEXT") == ("old", 1)


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "bad name", "ü"])
def test_illegal_topic_names(name: str) -> None:
    assert validate_topic_name(name).error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_plan_new_topic() -> None:
    result, replicas = plan_new_topic([1, 2, 3], 4, 2, {})
    assert result.ok and replicas == {0: (1, 2), 1: (2, 3), 2: (3, 1), 3: (1, 2)}
    assert plan_new_topic([1], 1, 2, {})[0].error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert plan_new_topic([1], 0, 1, {})[0].error_code == ErrorCode.INVALID_PARTITIONS
    assert plan_new_topic([1, 2], -5, -5, {0: [2], 1: [1]}) == (
        plan_new_topic([1], 1, 1, {})[0], {0: (2,), 1: (1,)})
    invalid: list[dict[int, list[int]]] = [{1: [1]}, {0: [1, 1]}, {0: [9]}, {0: []}]
    for bad in invalid:
        assert plan_new_topic([1], 1, 1, bad)[0].error_code == (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT)


def test_describe_cluster_refuses_controller_endpoints_in_an_encodable_answer() -> None:
    """endpoint_type 2 (controllers, KIP-919) does not exist here: the answer names the
    error and still carries every field v1 requires (the strict encoder checks)."""
    body: bodies.DescribeClusterRequest = {"include_cluster_authorized_operations": False,
                                           "endpoint_type": 2}
    request = Request(RequestHeader(ApiKey.DESCRIBE_CLUSTER, 1, 1, "c"), body,
                      SimpleNamespace(listener_name="PLAINTEXT"))  # type: ignore[arg-type]
    broker: Any = SimpleNamespace()
    answer = asyncio.run(describe_cluster.handle(broker, request))
    assert answer["error_code"] == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
    assert encode_response(request.header, answer)



def test_metadata_lists_a_topic_only_once_every_partition_has_a_state() -> None:
    """A topic being created (assignment written, some or no leader states yet) is unknown,
    as a Kafka broker would not know it yet: listed with only some partitions, librdkafka
    would fail the records it holds for the others with _UNKNOWN_PARTITION.  Partitions
    added later appear together once all of theirs are written; until then the topic keeps
    the partitions it had."""
    leader = PartitionState(1, 0, (1,))
    cache = MetadataCache(1)
    ids = {name: uuid.uuid4() for name in ("creating", "half", "ready", "growing")}

    def put(name: str, partitions: int, states: dict[int, PartitionState]) -> None:
        cache.put_topic(name, TopicMetadata(
            name, ids[name], {p: (1,) for p in range(partitions)}, states))

    put("creating", 2, {})
    put("half", 2, {0: leader})
    put("ready", 2, {0: leader, 1: leader})
    put("growing", 1, {0: leader})
    put("growing", 3, {0: leader, 1: leader})  # partitions 1 and 2 added, 2 has no state yet
    broker: Any = SimpleNamespace(cache=cache, cluster_id="c",
                                  config=SimpleNamespace(auto_create_topics_enable=False))

    def ask(names: list[str] | None) -> dict[str, tuple[int, list[int]]]:
        body: Any = {"topics": None if names is None else [{"name": n} for n in names],
                     "allow_auto_topic_creation": False}
        request = Request(RequestHeader(ApiKey.METADATA, 12, 1, "c"), body,
                          SimpleNamespace(listener_name="PLAINTEXT"))  # type: ignore[arg-type]
        answer = asyncio.run(metadata.handle(broker, request))
        return {t["name"]: (t["error_code"], [p["partition_index"] for p in t["partitions"]])
                for t in answer["topics"] if t["name"] is not None}

    assert ask(None) == {"growing": (0, [0]), "ready": (0, [0, 1])}
    assert ask(["creating", "half"]) == {
        "creating": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []),
        "half": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])}
    put("half", 2, {0: leader, 1: leader})
    put("growing", 3, {0: leader, 1: leader, 2: leader})
    assert ask(["half", "growing"]) == {"half": (0, [0, 1]), "growing": (0, [0, 1, 2])}
    ids["ready"] = uuid.uuid4()  # deleted and created again under its old name
    put("ready", 2, {0: leader})
    assert ask(["ready"]) == {"ready": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])}
