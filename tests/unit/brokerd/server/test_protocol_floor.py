"""Kafka 4.0's protocol floor (KIP-896): what is served, what is advertised, and the
UNSUPPORTED_VERSION answer a request below the floor gets in its own version's terms."""

from __future__ import annotations

import pkgutil
from typing import Any

import pytest

from brokerd.protocol import SCHEMA_VERSIONS, ApiKey, ErrorCode, decode_response, encode_request
from brokerd.protocol.messages import ALL_MESSAGES
from brokerd.server.handlers import API_TABLE, api_versions
from brokerd.server.unsupported_version import error_response
from tests.unit.brokerd.protocol.test_kafka_schemas import REMOVED_IN_KAFKA_4, kio_module
from tests.unit.brokerd.server.test_dispatch_and_partitions import _dispatch, _join

UNSUPPORTED = ErrorCode.UNSUPPORTED_VERSION
MESSAGES = {message.api_key: message for message in ALL_MESSAGES}


def kafka_floor(api_key: ApiKey) -> int:
    """The oldest version Kafka 4.0+ defines: kio is generated from Kafka's own schemas,
    which since KIP-896 start at the floor."""
    package = kio_module(MESSAGES[api_key])
    return min(int(info.name[1:]) for info in pkgutil.iter_modules(package.__path__)
               if info.name.startswith("v"))


@pytest.mark.parametrize("api_key", sorted(set(API_TABLE) - REMOVED_IN_KAFKA_4),
                         ids=lambda k: ApiKey(k).name)
def test_every_served_api_starts_at_kafka_4_floor(api_key: int) -> None:
    assert API_TABLE[api_key].min_version == kafka_floor(ApiKey(api_key))


def test_api_versions_advertises_what_is_served_but_produce_from_v0() -> None:
    """Produce v0-2 are advertised and refused, as Kafka 4.0 does (KAFKA-18659): older
    librdkafka otherwise stops compressing.  Every other range is exactly the served one."""
    advertised = {e["api_key"]: (e["min_version"], e["max_version"])
                  for e in api_versions.response_body()["api_keys"]}
    served = {key: (entry.min_version, entry.max_version) for key, entry in API_TABLE.items()}
    assert advertised == {**served, ApiKey.PRODUCE: (0, served[ApiKey.PRODUCE][1])}


def _round_trip(api_key: ApiKey, version: int, body: dict[str, Any]) -> dict[str, Any]:
    response = _join(_dispatch(encode_request(api_key, version, 5, "c", body)) or [])
    correlation_id, decoded = decode_response(api_key, version, response[4:])
    assert correlation_id == 5
    return decoded


def test_produce_below_the_floor_gets_unsupported_version_per_partition() -> None:
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": b""},
                                         {"index": 3, "records": b""}]}]}
    answer = _round_trip(ApiKey.PRODUCE, 2, body)
    [topic] = answer["responses"]
    assert topic["name"] == "t"
    assert [(p["index"], p["error_code"], p["base_offset"]) for p in
            topic["partition_responses"]] == [(0, UNSUPPORTED, -1), (3, UNSUPPORTED, -1)]


@pytest.mark.parametrize(("api_key", "version", "body", "errors"), [
    (ApiKey.OFFSET_COMMIT, 1, {"group_id": "g", "member_id": "", "topics": [
        {"name": "t", "partitions": [{"partition_index": 1, "committed_offset": 5,
                                      "committed_metadata": None}]}]},
     lambda a: [p["error_code"] for t in a["topics"] for p in t["partitions"]]),
    (ApiKey.CREATE_TOPICS, 1, {"topics": [{"name": "t", "num_partitions": 1,
                                           "replication_factor": 1, "assignments": [],
                                           "configs": []}], "timeout_ms": 1000},
     lambda a: [t["error_code"] for t in a["topics"]]),
    (ApiKey.DELETE_TOPICS, 0, {"topic_names": ["a", "b"], "timeout_ms": 1000},
     lambda a: [t["error_code"] for t in a["responses"]]),
    (ApiKey.DESCRIBE_CONFIGS, 0, {"resources": [{"resource_type": 2, "resource_name": "t",
                                                 "configuration_keys": None}]},
     lambda a: [r["error_code"] for r in a["results"]]),
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, 1, {"topics": [{"topic": "t", "partitions": [
        {"partition": 0, "leader_epoch": 1}]}]},
     lambda a: [p["error_code"] for t in a["topics"] for p in t["partitions"]]),
    (ApiKey.FETCH, 3, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "topics": [
        {"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0,
                                       "partition_max_bytes": 100}]}]},
     lambda a: [p["error_code"] for t in a["responses"] for p in t["partitions"]]),
    (ApiKey.LIST_OFFSETS, 0, {"replica_id": -1, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "timestamp": -1}]}]},
     lambda a: [p["error_code"] for t in a["topics"] for p in t["partitions"]]),
    (ApiKey.WRITE_TXN_MARKERS, 0, {"markers": [
        {"producer_id": 7, "producer_epoch": 0, "transaction_result": True,
         "topics": [{"name": "t", "partition_indexes": [0, 1]}], "coordinator_epoch": 0}]},
     lambda a: [p["error_code"] for m in a["markers"] for t in m["topics"]
                for p in t["partitions"]]),
])
def test_each_api_below_its_floor_names_the_error_on_every_entry(
        api_key: ApiKey, version: int, body: dict[str, Any], errors: Any) -> None:
    assert version < API_TABLE[api_key].min_version
    answer = _round_trip(api_key, version, body)
    assert errors(answer) and set(errors(answer)) == {UNSUPPORTED}


def test_every_readable_version_below_a_floor_has_an_answer() -> None:
    """No request the codec reads is ever met with a closed connection for its version."""
    for key, entry in API_TABLE.items():
        for version in range(SCHEMA_VERSIONS[ApiKey(key)][0], entry.min_version):
            assert error_response(key, version, {}) is not None, (ApiKey(key).name, version)


def test_an_api_with_only_a_top_level_error_gets_it_there() -> None:
    assert error_response(ApiKey.HEARTBEAT, 0, {}) == {"error_code": UNSUPPORTED}

