"""brokerd.protocol.fetch_v12 against the generic codec: the follower's hand-written Fetch
v12 request is byte for byte what the schema-driven encoder writes, and its answer decoder
reads what the broker's encoder writes (every field a fetcher uses); the leader's reading
of a request and writing of an answer give exactly what the generic codec gives, and any
other shape goes to the generic codec."""

from __future__ import annotations

from typing import Any

import pytest

from brokerd.protocol import ApiKey, ProtocolError, fetch_v12
from brokerd.protocol.codec import (
    RequestHeader,
    decode_request,
    encode_request,
    encode_response,
)
from brokerd.protocol.records import build_batch
from brokerd.server.transfer import RegionList
from brokerd.storage import FileRegion


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
    assert bytes(fetch_v12.encode_request(99, "broker-2-fetcher", body)) == expected


def test_a_cluster_id_is_refused() -> None:
    with pytest.raises(ValueError):
        fetch_v12.encode_request(1, "c", {**request_body([], []), "cluster_id": "x"})


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
    in_step = answer(4, batch)
    del in_step["diverging_epoch"]
    in_step["current_leader"] = {"leader_id": 2, "leader_epoch": 9}  # skipped
    body: dict[str, Any] = {"throttle_time_ms": 5, "error_code": 0, "session_id": 77,
                            "responses": [
        {"topic": "t", "partitions": [
            answer(0, batch), answer(1, None, error=6), answer(2, b""),
            answer(3, b"tiny", aborted=[{"producer_id": 9, "first_offset": 10},
                                        {"producer_id": 2**40, "first_offset": 0}]),
            in_step]},
        {"topic": "other-" + "y" * 150, "partitions": []}]}
    correlation_id, decoded = fetch_v12.decode_response(response_frame(body))
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
        assert mine["diverging_epoch"] == theirs.get("diverging_epoch")
        if theirs["records"] is None:
            assert mine["records"] is None
        else:
            assert bytes(mine["records"]) == theirs["records"]
    assert decoded["responses"][1]["partitions"] == []


def test_a_session_error_decodes() -> None:
    body = {"throttle_time_ms": 0, "error_code": 70, "session_id": 0, "responses": []}
    assert fetch_v12.decode_response(response_frame(body))[1] == {
        "throttle_time_ms": 0, "error_code": 70, "session_id": 0, "responses": []}


def test_a_truncated_answer_is_a_protocol_error() -> None:
    body = {"throttle_time_ms": 0, "error_code": 0, "session_id": 1, "responses": [
        {"topic": "t", "partitions": [answer(0, b"x" * 100)]}]}
    frame = response_frame(body)
    for cut in (3, 10, 20, len(frame) - 60, len(frame) - 1):
        with pytest.raises(ProtocolError):
            fetch_v12.decode_response(frame[:cut])


# ---- the leader's side: reading requests, writing answers --------------------------------

REQUESTS = [
    request_body([], []),
    request_body([{"topic": "t", "partitions": [wanted(0, 0)]}], []),
    {**request_body([{"topic": "t", "partitions": [wanted(0, 5), wanted(1, 2**40)]}], [],
                    rack="rack-b"), "replica_id": -1, "isolation_level": 1},
    request_body([{"topic": "tøpic-" + "x" * 200, "partitions": [
        wanted(i, 2**40 + i) for i in range(130)]},
        {"topic": "b", "partitions": [wanted(5, 9)]}],
        [{"topic": "gone", "partitions": [1, 2, 300]}, {"topic": "g2", "partitions": []}],
        rack="rack-a"),
]


@pytest.fixture
def generic_only(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Turn the hand-written leader's side off: what the generic codec alone does."""
    def turn_off() -> None:
        monkeypatch.setattr(fetch_v12, "decode_request_body", lambda buf, pos: None)
        monkeypatch.setattr(fetch_v12, "encode_response", lambda correlation_id, body: None)
    return turn_off


@pytest.mark.parametrize("body", REQUESTS)
def test_a_request_reads_as_the_generic_decoder_reads_it(body: dict[str, Any],
                                                         generic_only: Any) -> None:
    frame = encode_request(ApiKey.FETCH, 12, 99, "consumer-1", body)[4:]
    header = 2 + 2 + 4 + 2 + len("consumer-1") + 1
    by_hand = fetch_v12.decode_request_body(memoryview(frame), header)
    assert by_hand == body
    generic_only()
    assert decode_request(frame)[1] == by_hand


def test_a_request_of_another_shape_is_left_to_the_generic_decoder(generic_only: Any) -> None:
    body = request_body([{"topic": "t", "partitions": [wanted(0, 0)]}], [])
    header = 2 + 2 + 4 + 2 + len("c") + 1
    with_cluster_id = encode_request(ApiKey.FETCH, 12, 1, "c", {**body, "cluster_id": "k"})[4:]
    assert fetch_v12.decode_request_body(memoryview(with_cluster_id), header) is None
    plain = encode_request(ApiKey.FETCH, 12, 1, "c", body)[4:]
    for cut in (header + 3, header + 30, len(plain) - 1):  # truncated: the generic raises
        assert fetch_v12.decode_request_body(memoryview(plain[:cut]), header) is None
        with pytest.raises(ProtocolError):
            decode_request(plain[:cut])
    assert decode_request(with_cluster_id)[1]["cluster_id"] == "k"  # the generic read it
    generic_only()
    assert decode_request(with_cluster_id)[1]["cluster_id"] == "k"


def leader_answer(index: int, records: Any, aborted: list[dict[str, int]] | None = None
                  ) -> dict[str, Any]:
    return {"partition_index": index, "error_code": 0, "high_watermark": 2**33,
            "last_stable_offset": 2**33 - 1, "log_start_offset": 17,
            "aborted_transactions": aborted, "preferred_read_replica": -1, "records": records}


def test_an_answer_is_written_as_the_generic_encoder_writes_it(tmp_path: Any,
                                                               generic_only: Any) -> None:
    with (tmp_path / "segment").open("wb") as file:
        region = FileRegion(file.fileno(), 10, 9_000)
        body = {"throttle_time_ms": 5, "error_code": 0, "session_id": 77, "responses": [
            {"topic": "t", "partitions": [
                leader_answer(0, RegionList([region])), leader_answer(1, None),
                leader_answer(2, b""), leader_answer(3, b"v" * 5_000),
                leader_answer(4, memoryview(b"tiny"), aborted=[
                    {"producer_id": 9, "first_offset": 10},
                    {"producer_id": 2**40, "first_offset": 0}]),
                leader_answer(5, b"x", aborted=[])]},
            {"topic": "other-" + "y" * 150, "partitions": []}]}
        header = RequestHeader(ApiKey.FETCH, 12, 4242, "c")
        by_hand = encode_response(header, body)
        generic_only()
        generic = encode_response(header, body)
    assert len(by_hand) == len(generic) == 5  # bytes, the region, bytes, the 5,000, bytes
    for mine, theirs in zip(by_hand, generic, strict=True):
        if isinstance(theirs, bytearray):
            assert bytes(mine) == bytes(theirs)
        else:
            assert mine is theirs  # records travel as they are (sendfile)


def test_an_answer_of_another_shape_is_left_to_the_generic_encoder(generic_only: Any) -> None:
    header = RequestHeader(ApiKey.FETCH, 12, 1, "c")
    led_elsewhere = {**leader_answer(0, b""), "current_leader": {"leader_id": 2,
                                                                  "leader_epoch": 9}}
    body = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0,
            "responses": [{"topic": "t", "partitions": [led_elsewhere]}]}
    assert fetch_v12.encode_response(1, body) is None
    written = b"".join(bytes(part) for part in encode_response(header, body))
    generic_only()
    assert written == b"".join(bytes(part) for part in encode_response(header, body))
    broken = {**body, "responses": [{"topic": "t", "partitions": [
        {**leader_answer(0, b""), "high_watermark": "not a number"}]}]}
    with pytest.raises(ProtocolError):  # the generic encoder's error, not struct's
        encode_response(header, broken)
