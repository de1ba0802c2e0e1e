"""brokerd.protocol.leader_and_isr_v5 against the generic codec: a LeaderAndIsr v5
request, as the controller writes it and as the generic encoder writes it, reads exactly
as the generic decoder reads it; any other shape is left to the generic decoder."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from brokerd.coordination.leader_and_isr_codec import Entry, PushRequest
from brokerd.coordination.leader_and_isr_codec import encode_request as push_request
from brokerd.coordination.znodes import PartitionState
from brokerd.protocol import ApiKey, ProtocolError, leader_and_isr_v5
from brokerd.protocol.codec import decode_request, encode_request

CLIENT = "controller-1"
HEADER = 2 + 2 + 4 + 2 + len(CLIENT) + 1  # api key, version, correlation, client id, tags


def partition(index: int, **changes: Any) -> dict[str, Any]:
    return {"partition_index": index, "controller_epoch": 4, "leader": 2, "leader_epoch": 9,
            "isr": [2, 3], "partition_epoch": 12, "replicas": [1, 2, 3],
            "adding_replicas": [], "removing_replicas": [], "is_new": False, **changes}


def request(topics: list[dict[str, Any]], live_leaders: list[dict[str, Any]] | None = None
            ) -> dict[str, Any]:
    return {"controller_id": 1, "controller_epoch": 4, "broker_epoch": -1, "type": 0,
            "topic_states": topics, "live_leaders": live_leaders or []}


REQUESTS = [
    request([]),
    request([{"topic_name": "t", "topic_id": uuid.UUID(int=7), "partition_states": [
        partition(0)]}]),
    request([{"topic_name": "tøpic-" + "x" * 200, "topic_id": uuid.uuid4(),
              "partition_states": [partition(i, isr=list(range(1, 10)),
                                             replicas=list(range(1, 130))) for i in range(3)]},
             {"topic_name": "moving", "topic_id": uuid.uuid4(), "partition_states": [
                 partition(5, adding_replicas=[4, 5], removing_replicas=[1], is_new=True,
                           leader=-1, isr=[])]}],
            [{"broker_id": 2, "host_name": "broker-2.local", "port": 9092}]),
]


@pytest.fixture
def generic_only(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Turn the hand-written reader off: what the generic codec alone does."""
    def turn_off() -> None:
        monkeypatch.setattr(leader_and_isr_v5, "decode_request_body", lambda buf, pos: None)
    return turn_off


@pytest.mark.parametrize("body", REQUESTS)
def test_a_request_reads_as_the_generic_decoder_reads_it(body: dict[str, Any],
                                                         generic_only: Any) -> None:
    frame = encode_request(ApiKey.LEADER_AND_ISR, 5, 3, CLIENT, body)[4:]
    by_hand = leader_and_isr_v5.decode_request_body(memoryview(frame), HEADER)
    assert by_hand == body
    assert decode_request(frame)[1] == by_hand
    generic_only()
    assert decode_request(frame)[1] == by_hand


def test_the_controllers_push_reads_as_the_generic_decoder_reads_it(generic_only: Any
                                                                    ) -> None:
    topic_id = uuid.uuid4()
    states: dict[tuple[str, int], Entry] = {
        ("t", index): (topic_id, PartitionState(2, 9, (2, 3), 4, 12 + index), (1, 2, 3), (), ())
        for index in range(40)}
    frame = push_request(3, CLIENT, PushRequest(1, 4, states))[4:]
    by_hand = leader_and_isr_v5.decode_request_body(memoryview(frame), HEADER)
    assert by_hand is not None and len(by_hand["topic_states"][0]["partition_states"]) == 40
    generic_only()
    assert decode_request(frame)[1] == by_hand


def test_a_request_of_another_shape_is_left_to_the_generic_decoder() -> None:
    plain = encode_request(ApiKey.LEADER_AND_ISR, 5, 1, CLIENT, REQUESTS[2])[4:]
    for cut in (HEADER + 3, HEADER + 40, len(plain) - 1):  # truncated: the generic raises
        assert leader_and_isr_v5.decode_request_body(memoryview(plain[:cut]), HEADER) is None
        with pytest.raises(ProtocolError):
            decode_request(plain[:cut])
    tagged = bytearray(plain)
    tagged[-1] = 1  # a body tagged field follows: one (tag 0, 0 bytes)
    tagged += b"\x00\x00"
    assert leader_and_isr_v5.decode_request_body(memoryview(tagged), HEADER) is None
    assert decode_request(tagged)[1] == REQUESTS[2]  # the generic decoder skips the tag
