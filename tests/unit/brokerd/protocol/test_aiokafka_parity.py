"""aiokafka's hand-written protocol structs (facts written down independently of Kafka's
JSON schemas) encode requests we decode, and decode responses we encode."""

from __future__ import annotations

import io

from aiokafka.protocol.admin import ApiVersionRequest_v2, ApiVersionResponse_v2
from aiokafka.protocol.commit import OffsetCommitRequest_v2, OffsetCommitResponse_v2
from aiokafka.protocol.fetch import FetchRequest_v4, FetchRequest_v11, FetchResponse_v11
from aiokafka.protocol.group import JoinGroupRequest_v5, JoinGroupResponse_v5
from aiokafka.protocol.metadata import (
    MetadataRequest_v0,
    MetadataRequest_v1,
    MetadataRequest_v5,
    MetadataResponse_v5,
)
from aiokafka.protocol.produce import ProduceRequest_v7, ProduceResponse_v7

from brokerd.protocol import ApiKey, RequestHeader, decode_request, encode_response
from brokerd.protocol.records import build_batch

BATCH = build_batch([(b"k", b"v", [], 1_700_000_000_000)])


def _ours(request, correlation_id=7, client_id="aio"):
    """Frame an aiokafka request as it goes on the wire and decode it with our codec."""
    frame = request.build_request_header(correlation_id, client_id).encode() + request.encode()
    header, body = decode_request(frame)
    assert header == RequestHeader(request.API_KEY, request.API_VERSION, correlation_id, client_id)
    return body


def _theirs(response_class, api_key, version, body):
    """Encode a response with our codec and decode it with aiokafka (header stripped)."""
    frame = b"".join(encode_response(RequestHeader(api_key, version, 5, None), body))
    assert int.from_bytes(frame[4:8], "big") == 5
    return response_class.decode(io.BytesIO(frame[8:]))


def test_api_versions_v2() -> None:
    # Fields of later versions decode at their defaults.
    assert _ours(ApiVersionRequest_v2()) == {
        "client_software_name": "",
        "client_software_version": "",
    }
    body = {
        "error_code": 0,
        "api_keys": [{"api_key": 0, "min_version": 3, "max_version": 10}],
        "throttle_time_ms": 12,
    }
    decoded = _theirs(ApiVersionResponse_v2, ApiKey.API_VERSIONS, 2, body)
    assert decoded.to_object() == {
        "error_code": 0,
        "api_versions": [{"api_key": 0, "min_version": 3, "max_version": 10}],
        "throttle_time_ms": 12,
    }


def test_metadata_requests() -> None:
    topics = _ours(MetadataRequest_v0(["a", "b"]))["topics"]
    assert [topic["name"] for topic in topics] == ["a", "b"]
    assert topics[0]["topic_id"].int == 0  # a v10+ field, at its default
    assert _ours(MetadataRequest_v1(None))["topics"] is None
    body = _ours(MetadataRequest_v5(["t"], False))
    assert [topic["name"] for topic in body["topics"]] == ["t"]
    assert body["allow_auto_topic_creation"] is False


def test_metadata_response_v5() -> None:
    body = {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": 1, "host": "h1", "port": 9092, "rack": None}],
        "cluster_id": "c-1",
        "controller_id": 1,
        "topics": [
            {
                "error_code": 0,
                "name": "t",
                "is_internal": False,
                "partitions": [
                    {
                        "error_code": 0,
                        "partition_index": 0,
                        "leader_id": 1,
                        "replica_nodes": [1, 2],
                        "isr_nodes": [1],
                        "offline_replicas": [2],
                    }
                ],
            }
        ],
    }
    decoded = _theirs(MetadataResponse_v5, ApiKey.METADATA, 5, body)
    assert decoded.brokers == [(1, "h1", 9092, None)]
    assert (decoded.cluster_id, decoded.controller_id) == ("c-1", 1)
    assert decoded.topics == [(0, "t", False, [(0, 0, 1, [1, 2], [1], [2])])]


def test_produce_v7() -> None:
    request = ProduceRequest_v7(None, -1, 1500, [("orders", [(3, BATCH)])])
    body = _ours(request)
    assert (body["transactional_id"], body["acks"], body["timeout_ms"]) == (None, -1, 1500)
    partition = body["topic_data"][0]["partition_data"][0]
    assert body["topic_data"][0]["name"] == "orders"
    assert partition["index"] == 3
    assert isinstance(partition["records"], memoryview) and partition["records"] == BATCH

    response = {
        "responses": [
            {
                "name": "orders",
                "partition_responses": [
                    {"index": 3, "error_code": 0, "base_offset": 40, "log_start_offset": 0}
                ],
            }
        ],
        "throttle_time_ms": 9,
    }
    decoded = _theirs(ProduceResponse_v7, ApiKey.PRODUCE, 7, response)
    assert decoded.topics == [("orders", [(3, 0, 40, -1, 0)])]
    assert decoded.throttle_time_ms == 9


def test_fetch_requests() -> None:
    body = _ours(FetchRequest_v4(-1, 500, 1, 1 << 20, 1, [("t", [(0, 77, 4096)])]))
    assert (body["replica_id"], body["max_wait_ms"], body["min_bytes"]) == (-1, 500, 1)
    assert (body["max_bytes"], body["isolation_level"]) == (1 << 20, 1)
    assert body["topics"] == [
        {
            "topic": "t",
            "partitions": [
                {
                    "partition": 0,
                    "current_leader_epoch": -1,
                    "fetch_offset": 77,
                    "last_fetched_epoch": -1,
                    "log_start_offset": -1,
                    "partition_max_bytes": 4096,
                }
            ],
        }
    ]
    body = _ours(
        FetchRequest_v11(-1, 500, 1, 1 << 20, 0, 12, 3, [("t", [(0, 5, 77, 9, 4096)])], [], "r1")
    )
    assert (body["session_id"], body["session_epoch"], body["rack_id"]) == (12, 3, "r1")
    partition = body["topics"][0]["partitions"][0]
    assert (partition["current_leader_epoch"], partition["log_start_offset"]) == (5, 9)


def test_fetch_response_v11_records_travel_as_separate_buffer() -> None:
    big = BATCH * 200  # above the inline threshold: sent as its own buffer
    body = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 12,
        "responses": [
            {
                "topic": "t",
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "high_watermark": 10,
                        "last_stable_offset": 10,
                        "log_start_offset": 0,
                        "aborted_transactions": None,
                        "preferred_read_replica": -1,
                        "records": big,
                    }
                ],
            }
        ],
    }
    parts = encode_response(RequestHeader(ApiKey.FETCH, 11, 5, None), body)
    assert any(part is big for part in parts)
    decoded = _theirs(FetchResponse_v11, ApiKey.FETCH, 11, body)
    assert decoded.topics == [("t", [(0, 0, 10, 10, 0, None, -1, big)])]


def test_join_group_v5() -> None:
    request = JoinGroupRequest_v5("g", 10000, 30000, "", "inst-1", "consumer", [("range", b"m")])
    body = _ours(request)
    assert body["group_id"] == "g"
    assert (body["session_timeout_ms"], body["rebalance_timeout_ms"]) == (10000, 30000)
    assert (body["member_id"], body["group_instance_id"]) == ("", "inst-1")
    assert body["protocols"] == [{"name": "range", "metadata": b"m"}]
    response = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "generation_id": 4,
        "protocol_name": "range",
        "leader": "m-1",
        "member_id": "m-1",
        "members": [{"member_id": "m-1", "group_instance_id": None, "metadata": b"x"}],
    }
    decoded = _theirs(JoinGroupResponse_v5, ApiKey.JOIN_GROUP, 5, response)
    assert decoded.to_object() == {
        "throttle_time_ms": 0,
        "error_code": 0,
        "generation_id": 4,
        "group_protocol": "range",
        "leader_id": "m-1",
        "member_id": "m-1",
        "members": [{"member_id": "m-1", "group_instance_id": None, "member_metadata": b"x"}],
    }


def test_offset_commit_v2() -> None:
    body = _ours(OffsetCommitRequest_v2("g", 4, "m-1", -1, [("t", [(0, 99, "meta")])]))
    assert (body["group_id"], body["generation_id_or_member_epoch"]) == ("g", 4)
    assert (body["member_id"], body["retention_time_ms"]) == ("m-1", -1)
    partition = body["topics"][0]["partitions"][0]
    assert (partition["partition_index"], partition["committed_offset"]) == (0, 99)
    assert partition["committed_metadata"] == "meta"
    response = {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "error_code": 0}]}]}
    decoded = _theirs(OffsetCommitResponse_v2, ApiKey.OFFSET_COMMIT, 2, response)
    assert decoded.topics == [("t", [(0, 0)])]
