"""Framing and conventions of the codec that the round-trip properties do not pin down."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterator

import pytest

from brokerd.protocol import (
    SCHEMA_VERSIONS,
    ApiKey,
    ErrorCode,
    ProtocolError,
    RequestHeader,
    codec,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    response_with_defaults,
)
from brokerd.protocol.compiler import (
    INLINE_RECORDS_LIMIT,
    ReusedArray,
    ReusedStruct,
    Writer,
    compile_struct,
)
from brokerd.protocol.messages import produce


@pytest.fixture
def lenient_responses(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Production's response encoders fill missing keys with schema defaults, which these
    tests pin down; the suite itself compiles them strict (tests/conftest.py)."""
    monkeypatch.setattr(codec, "STRICT_ENCODING", False)
    codec._compiled.clear()  # compiled per (api, version): recompile without the check
    yield
    codec._compiled.clear()


class FileRegion:
    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


def _fetch_body(records: object) -> dict:
    partition = {"partition_index": 0, "high_watermark": 5, "records": records}
    return {"responses": [{"topic": "t", "partitions": [partition]}]}


@pytest.mark.usefixtures("lenient_responses")
def test_records_objects_with_nbytes_pass_through_unchanged() -> None:
    region = FileRegion(10_000)
    parts = encode_response(RequestHeader(ApiKey.FETCH, 12, 3, None), _fetch_body(region))
    assert sum(1 for part in parts if part is region) == 1
    total = sum(part.nbytes if part is region else len(part) for part in parts)
    assert int.from_bytes(parts[0][:4], "big") == total - 4
    # compact length prefix right before the region: uvarint(10_000 + 1)
    before = parts[parts.index(region) - 1]
    assert bytes(before[-2:]) == bytes([(10_001 & 0x7F) | 0x80, 10_001 >> 7])


@pytest.mark.usefixtures("lenient_responses")
def test_small_bytes_records_are_inlined_large_ones_are_not() -> None:
    header = RequestHeader(ApiKey.FETCH, 11, 3, None)
    small = b"s" * (INLINE_RECORDS_LIMIT - 1)
    assert len(encode_response(header, _fetch_body(small))) == 1
    large = b"l" * INLINE_RECORDS_LIMIT
    parts = encode_response(header, _fetch_body(large))
    assert any(part is large for part in parts)
    _, body = decode_response(ApiKey.FETCH, 11, b"".join(parts)[4:])
    assert body["responses"][0]["partitions"][0]["records"] == large


@pytest.mark.usefixtures("lenient_responses")
def test_response_header_versions() -> None:
    flexible = b"".join(encode_response(RequestHeader(ApiKey.METADATA, 9, 1, None), {}))
    non_flexible = b"".join(encode_response(RequestHeader(ApiKey.METADATA, 8, 1, None), {}))
    assert flexible[4:9] == b"\x00\x00\x00\x01\x00"  # correlation id + empty tag section
    assert non_flexible[4:8] == b"\x00\x00\x00\x01" and non_flexible[8:12] == b"\x00" * 4
    api_versions = b"".join(encode_response(RequestHeader(ApiKey.API_VERSIONS, 3, 1, None), {}))
    # ApiVersions v3 is flexible but its response header stays v0: error_code follows at once.
    assert api_versions[4:10] == b"\x00\x00\x00\x01\x00\x00"


def test_unsupported_api_versions_answer_is_a_v0_body() -> None:
    body = {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": []}
    frame = b"".join(encode_response(RequestHeader(ApiKey.API_VERSIONS, 0, 8, None), body))
    assert frame == struct.pack(">iihi", 10, 8, 35, 0)


def test_missing_keys_take_schema_defaults() -> None:
    frame = encode_request(ApiKey.JOIN_GROUP, 5, 1, None, {"group_id": "g"})
    _, body = decode_request(frame[4:])
    assert body["rebalance_timeout_ms"] == -1  # Kafka's explicit default
    assert body["group_instance_id"] is None  # nullable
    assert (body["member_id"], body["protocols"], body["session_timeout_ms"]) == ("", [], 0)


def test_none_where_the_version_has_no_null_is_sent_empty() -> None:
    frame = encode_request(ApiKey.METADATA, 0, 1, None, {"topics": None})
    assert frame.endswith(b"\x00\x00\x00\x00")
    _, body = decode_request(frame[4:])
    assert body["topics"] == []


def test_null_on_the_wire_in_a_non_nullable_field_is_an_error() -> None:
    frame = struct.pack(">hhihi", ApiKey.METADATA, 0, 1, -1, -1)
    with pytest.raises(ProtocolError, match="non-nullable"):
        decode_request(frame)


def _fetch_v12_with_tags(tags: bytes) -> bytes:
    body = encode_request(ApiKey.FETCH, 12, 1, "c", {"topics": []})[4:]
    assert body.endswith(b"\x00")  # empty top-level tag section
    return body[:-1] + tags


def test_known_tags_decode_by_name_unknown_ones_are_skipped() -> None:
    cluster = b"c-9"
    known = bytes([0, len(cluster) + 1, len(cluster) + 1]) + cluster  # tag 0: cluster_id
    unknown = bytes([77, 3]) + b"xyz"
    frame = _fetch_v12_with_tags(bytes([2]) + known + unknown)
    header, body = decode_request(frame)
    assert header.correlation_id == 1
    assert body["cluster_id"] == "c-9"
    frame = _fetch_v12_with_tags(bytes([1]) + unknown)
    assert decode_request(frame)[1]["cluster_id"] is None


def test_tag_size_overrunning_the_frame_is_an_error() -> None:
    with pytest.raises(ProtocolError):
        decode_request(_fetch_v12_with_tags(bytes([1, 77, 50]) + b"xyz"))


@pytest.mark.usefixtures("lenient_responses")
def test_tagged_values_are_written_only_when_not_default() -> None:
    header = RequestHeader(ApiKey.PRODUCE, 10, 1, None)
    partition = {"index": 0, "current_leader": {"leader_id": -1, "leader_epoch": -1}}
    plain = b"".join(encode_response(header, {"responses": [{"partition_responses": [partition]}]}))
    partition["current_leader"] = {"leader_id": 2, "leader_epoch": 7}
    tagged = b"".join(encode_response(header, {"responses": [{"partition_responses": [partition]}]}))
    assert len(tagged) > len(plain)
    _, body = decode_response(ApiKey.PRODUCE, 10, tagged[4:])
    leader = body["responses"][0]["partition_responses"][0]["current_leader"]
    assert leader == {"leader_id": 2, "leader_epoch": 7}


def test_trailing_bytes_after_the_body_are_ignored() -> None:
    frame = encode_request(ApiKey.HEARTBEAT, 0, 1, "c", {"group_id": "g"})[4:] + b"extra"
    assert decode_request(frame)[1]["group_id"] == "g"


def test_unencodable_value_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="cannot encode"):
        encode_request(ApiKey.HEARTBEAT, 0, 1, None, {"generation_id": "not an int"})


def test_schema_versions_match_the_assignment() -> None:
    assert SCHEMA_VERSIONS[ApiKey.API_VERSIONS] == (0, 4)
    assert SCHEMA_VERSIONS[ApiKey.METADATA] == (0, 12)
    assert SCHEMA_VERSIONS[ApiKey.PRODUCE] == (0, 12)
    assert SCHEMA_VERSIONS[ApiKey.FETCH] == (0, 12)
    assert SCHEMA_VERSIONS[ApiKey.OFFSET_DELETE] == (0, 0)


def test_strict_encoder_refuses_misspelled_and_missing_keys() -> None:
    _, encode = compile_struct(produce.RESPONSE, 9, True, strict=True)
    partition = {"index": 0, "error_code": 0, "base_offset": 5, "log_append_time_ms": -1,
                 "log_start_offset": 0, "record_errors": [], "error_message": None}
    complete = {"responses": [{"name": "t", "partition_responses": [partition]}],
                "throttle_time_ms": 0}
    encode(Writer(), complete)
    with pytest.raises(ProtocolError, match=r"unknown keys \['throttle_ms'\]"):
        encode(Writer(), {**complete, "throttle_ms": 0})
    del partition["base_offset"]
    with pytest.raises(ProtocolError, match=r"missing keys \['base_offset'\]"):
        encode(Writer(), complete)


def test_denials_are_completed_with_the_versions_defaults() -> None:
    body = response_with_defaults(ApiKey.OFFSET_COMMIT, 8, {"topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "error_code": 29}]}]})
    assert body == {"throttle_time_ms": 0, "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "error_code": 29}]}]}
    _, encode = compile_struct(codec._MESSAGES[ApiKey.JOIN_GROUP].response, 9, True, strict=True)
    encode(Writer(), response_with_defaults(ApiKey.JOIN_GROUP, 9, {"error_code": 30}))


def _metadata_body(partitions: list[dict]) -> dict:
    return {"throttle_time_ms": 0,
            "brokers": [{"node_id": 1, "host": "h", "port": 9092, "rack": None}],
            "cluster_id": "c", "controller_id": 1,
            "topics": [{"error_code": 0, "name": "t", "topic_id": uuid.UUID(int=7),
                        "is_internal": False,
                        "partitions": partitions}]}


def _partitions(leader: int) -> list[dict]:
    return [{"error_code": 0, "partition_index": index, "leader_id": leader, "leader_epoch": 2,
             "replica_nodes": [1, 2, 3], "isr_nodes": [1, 2], "offline_replicas": []}
            for index in range(5)]


@pytest.mark.parametrize("version", [1, 9, 12])
def test_a_reused_array_encodes_as_the_list_it_holds_and_keeps_that_encoding(
        version: int) -> None:
    header = RequestHeader(ApiKey.METADATA, version, 7, None)
    reused = ReusedArray(_partitions(leader=1))
    expected = b"".join(encode_response(header, _metadata_body(_partitions(leader=1))))
    assert b"".join(encode_response(header, _metadata_body(reused))) == expected
    assert len(reused.encodings) == 1
    # What is kept is what is sent from then on, for this version only.
    reused[0]["leader_id"] = 3  # a change the class forbids: it does not reach the bytes
    assert b"".join(encode_response(header, _metadata_body(reused))) == expected
    other = RequestHeader(ApiKey.METADATA, 5, 7, None)
    encoded_other = b"".join(encode_response(other, _metadata_body(reused)))
    _, decoded = decode_response(ApiKey.METADATA, other.api_version, encoded_other[4:])
    assert decoded["topics"][0]["partitions"][0]["leader_id"] == 3
    assert len(reused.encodings) == 2


@pytest.mark.parametrize("version", [1, 9, 12])
def test_reused_elements_encode_as_their_fields_and_keep_that_encoding_per_version(
        version: int) -> None:
    header = RequestHeader(ApiKey.METADATA, version, 7, None)
    elements = [ReusedStruct(partition) for partition in _partitions(leader=1)]
    expected = b"".join(encode_response(header, _metadata_body(_partitions(leader=1))))
    assert b"".join(encode_response(header, _metadata_body(list(elements)))) == expected
    assert all(len(element.encodings) == 1 for element in elements)
    # A new array around the same elements (a topic of which one partition changed)
    # sends each kept element's bytes, and only the new element's own fields.
    elements[0]["leader_id"] = 3  # a change the class forbids: it does not reach the bytes
    changed = ReusedStruct(_partitions(leader=2)[4])
    mixed = ReusedArray([*elements[:4], changed])
    expected_mixed = b"".join(encode_response(header, _metadata_body(
        [*_partitions(leader=1)[:4], _partitions(leader=2)[4]])))
    assert b"".join(encode_response(header, _metadata_body(mixed))) == expected_mixed
    other = RequestHeader(ApiKey.METADATA, 5, 7, None)
    _, decoded = decode_response(ApiKey.METADATA, other.api_version, b"".join(
        encode_response(other, _metadata_body(mixed)))[4:])
    assert [p["leader_id"] for p in decoded["topics"][0]["partitions"]] == [3, 1, 1, 1, 2]
    assert len(elements[0].encodings) == 2


@pytest.mark.usefixtures("lenient_responses")
def test_a_reused_array_placing_a_records_buffer_is_encoded_in_place_not_kept() -> None:
    region = FileRegion(10_000)
    body = _fetch_body(region)
    body["responses"][0]["partitions"] = ReusedArray(body["responses"][0]["partitions"])
    header = RequestHeader(ApiKey.FETCH, 11, 3, None)
    parts = encode_response(header, body)
    assert sum(1 for part in parts if part is region) == 1
    assert body["responses"][0]["partitions"].encodings == {}
