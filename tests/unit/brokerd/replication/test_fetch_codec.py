"""brokerd.replication.fetch_codec against the generic codec: the follower's hand-written
Fetch v12 request is byte for byte what the schema-driven encoder writes, and its answer
decoder reads what the broker's encoder writes (every field a fetcher uses)."""

from __future__ import annotations

from typing import Any

import pytest

from brokerd.protocol import ApiKey, ProtocolError
from brokerd.protocol.codec import RequestHeader, encode_request, encode_response
from brokerd.protocol.records import build_batch
from brokerd.replication import fetch_codec


def request_body(topics: list[dict[str, Any]], forgotten: list[dict[str, Any]],
                 rack: str = "") -> dict[str, Any]:
    return {"cluster_id": None, "replica_id": 2, "max_wait_ms": 500, "min_bytes": 1,
            "max_bytes": 10_485_760, "isolation_level": 0, "session_id": 1_234_567,
            "session_epoch": 2**31 - 1, "forgotten_topics_data": forgotten,
            "rack_id": rack, "topics": topics}


def wanted(index: int, offset: int) -> dict[str, Any]:
    return {"partition": index, "current_leader_epoch": 7, "fetch_offset": offset,
            "last_fetched_epoch": 6, "log_start_offset": 3, "partition_max_bytes": 1 << 20}


@pytest.mark.parametrize("body", [
    request_body([], []),
    request_body([{"topic": "t", "partitions": [wanted(0, 0)]}], []),
    request_body([{"topic": "tøpic-" + "x" * 200, "partitions": [
        wanted(i, 2**40 + i) for i in range(130)]},
        {"topic": "b", "partitions": [wanted(5, 9)]}],
        [{"topic": "gone", "partitions": [1, 2, 300]}, {"topic": "g2", "partitions": []}],
        rack="rack-a"),
])
def test_the_request_is_what_the_generic_encoder_writes(body: dict[str, Any]) -> None:
    expected = encode_request(ApiKey.FETCH, 12, 99, "broker-2-fetcher", body)
    assert bytes(fetch_codec.encode_request(99, "broker-2-fetcher", body)) == expected


def test_a_cluster_id_is_refused() -> None:
    with pytest.raises(ValueError):
        fetch_codec.encode_request(1, "c", {**request_body([], []), "cluster_id": "x"})


def answer(index: int, records: bytes | None, error: int = 0,
           aborted: list[dict[str, int]] | None = None) -> dict[str, Any]:
    return {"partition_index": index, "error_code": error, "high_watermark": 2**33,
            "last_stable_offset": 2**33 - 1, "log_start_offset": 17,
            "aborted_transactions": aborted, "preferred_read_replica": -1, "records": records,
            "diverging_epoch": {"epoch": 3, "end_offset": 44}}


def response_frame(body: dict[str, Any]) -> bytes:
    parts = encode_response(RequestHeader(ApiKey.FETCH, 12, 4242, "c"), body)
    return b"".join(bytes(part) for part in parts)[4:]


def test_answers_decode_as_the_generic_decoder_reads_them() -> None:
    batch = build_batch([(None, b"v" * 5000, [], 1_700_000_000_000)] * 3)
    body: dict[str, Any] = {"throttle_time_ms": 5, "error_code": 0, "session_id": 77,
                            "responses": [
        {"topic": "t", "partitions": [
            answer(0, batch), answer(1, None, error=6), answer(2, b""),
            answer(3, b"tiny", aborted=[{"producer_id": 9, "first_offset": 10},
                                        {"producer_id": 2**40, "first_offset": 0}])]},
        {"topic": "other-" + "y" * 150, "partitions": []}]}
    correlation_id, decoded = fetch_codec.decode_response(response_frame(body))
    assert correlation_id == 4242
    assert (decoded["throttle_time_ms"], decoded["error_code"], decoded["session_id"]) == (
        5, 0, 77)
    assert [t["topic"] for t in decoded["responses"]] == ["t", "other-" + "y" * 150]
    got = decoded["responses"][0]["partitions"]
    sent = body["responses"][0]["partitions"]
    for mine, theirs in zip(got, sent, strict=True):
        for key in ("partition_index", "error_code", "high_watermark", "last_stable_offset",
                    "log_start_offset", "aborted_transactions", "preferred_read_replica"):
            assert mine[key] == theirs[key], key
        if theirs["records"] is None:
            assert mine["records"] is None
        else:
            assert bytes(mine["records"]) == theirs["records"]
    assert decoded["responses"][1]["partitions"] == []


def test_a_session_error_decodes() -> None:
    body = {"throttle_time_ms": 0, "error_code": 70, "session_id": 0, "responses": []}
    assert fetch_codec.decode_response(response_frame(body))[1] == {
        "throttle_time_ms": 0, "error_code": 70, "session_id": 0, "responses": []}


def test_a_truncated_answer_is_a_protocol_error() -> None:
    body = {"throttle_time_ms": 0, "error_code": 0, "session_id": 1, "responses": [
        {"topic": "t", "partitions": [answer(0, b"x" * 100)]}]}
    frame = response_frame(body)
    for cut in (3, 10, 20, len(frame) - 60, len(frame) - 1):
        with pytest.raises(ProtocolError):
            fetch_codec.decode_response(frame[:cut])
