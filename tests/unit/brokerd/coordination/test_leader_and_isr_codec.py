"""The controller's hand-written LeaderAndIsr v5 request and answer
(:mod:`brokerd.coordination.leader_and_isr_codec`) against the generic codec: the same
bytes for the same request, and the error code read from what a broker answers."""

from __future__ import annotations

import uuid

import pytest

from brokerd.coordination import leader_and_isr_codec as codec
from brokerd.coordination.znodes import PartitionState
from brokerd.protocol import (
    ApiKey,
    ErrorCode,
    ProtocolError,
    RequestHeader,
    decode_request,
    encode_request,
    encode_response,
)

IDS = [uuid.uuid4() for _ in range(2)]


def request() -> codec.PushRequest:
    # Out of order, two topics, a name longer than one varint byte holds, partitions
    # beyond 127 (a two-byte array length), an empty ISR and a reassignment in progress.
    long_name = "t" * 200
    states: dict[tuple[str, int], codec.Entry] = {
        (long_name, 3): (IDS[1], PartitionState(2, 7, (2, 3), 4, 12), (2, 3, 1), (), ()),
        ("a", 1): (IDS[0], PartitionState(-1, 3, (), 4, 9), (1, 2), (4,), (2,)),
    }
    for partition in range(200):
        states[(long_name, 1000 + partition)] = (
            IDS[1], PartitionState(1, partition, (1, 2, 3), 3, partition), (1, 2, 3), (), ())
    return codec.PushRequest(3, 11, states)


def generic_body(push: codec.PushRequest) -> dict[str, object]:
    topics: dict[str, dict[str, object]] = {}
    for (name, partition), (topic_id, state, replicas, adding, removing) in sorted(
            push.states.items()):
        topic = topics.setdefault(name, {"topic_name": name, "topic_id": topic_id,
                                         "partition_states": []})
        topic["partition_states"].append({  # type: ignore[attr-defined]
            "partition_index": partition, "controller_epoch": state.controller_epoch,
            "leader": state.leader, "leader_epoch": state.leader_epoch,
            "isr": list(state.isr), "partition_epoch": state.zk_version,
            "replicas": list(replicas), "adding_replicas": list(adding),
            "removing_replicas": list(removing), "is_new": False})
    return {"controller_id": push.controller_id, "controller_epoch": push.controller_epoch,
            "broker_epoch": -1, "type": 0, "topic_states": list(topics.values()),
            "live_leaders": []}


def test_the_request_is_the_generic_codecs_bytes() -> None:
    push = request()
    frame = codec.encode_request(42, "broker-3-controller", push)
    assert bytes(frame) == encode_request(ApiKey.LEADER_AND_ISR, 5, 42, "broker-3-controller",
                                          generic_body(push))
    header, body = decode_request(bytes(frame[4:]))
    assert (header.api_key, header.api_version, header.correlation_id) == (
        ApiKey.LEADER_AND_ISR, 5, 42)
    assert [t["topic_name"] for t in body["topic_states"]] == ["a", "t" * 200]
    assert body["topic_states"][1]["partition_states"][0]["partition_index"] == 3


def test_the_answers_error_code_is_read() -> None:
    header = RequestHeader(ApiKey.LEADER_AND_ISR, 5, 9, "c")
    answer = {"error_code": int(ErrorCode.STALE_CONTROLLER_EPOCH), "topics": [
        {"topic_id": IDS[0], "partition_errors": [
            {"partition_index": 1, "error_code": int(ErrorCode.UNKNOWN_TOPIC_ID)}]}]}
    frame = b"".join(bytes(part) for part in encode_response(header, answer))
    assert codec.decode_response(frame[4:]) == (
        9, {"error_code": ErrorCode.STALE_CONTROLLER_EPOCH})


def test_a_truncated_answer_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        codec.decode_response(b"\0\0\0\x09\0\0")
