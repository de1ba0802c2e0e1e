"""A topic's partitions in Metadata answers: elements handed on while their state holds."""

from __future__ import annotations

import uuid

from brokerd.coordination.znodes import PartitionState, TopicMetadata
from brokerd.protocol import ApiKey, ErrorCode, RequestHeader, encode_response
from brokerd.server.handlers.metadata import PartitionEntries, partition_entries

LIVE = frozenset({1, 2, 3})


def _topic(leaders: dict[int, int], isr: tuple[int, ...] = (1, 2, 3)) -> TopicMetadata:
    return TopicMetadata("t", uuid.UUID(int=5), {p: (1, 2, 3) for p in leaders},
                         {p: PartitionState(leader, 1, isr) for p, leader in leaders.items()})


def _encoded(entries: list) -> bytes:
    body = {"throttle_time_ms": 0, "brokers": [], "cluster_id": "c", "controller_id": 1,
            "topics": [{"error_code": 0, "name": "t", "topic_id": uuid.UUID(int=5),
                        "is_internal": False, "partitions": entries}]}
    return b"".join(encode_response(RequestHeader(ApiKey.METADATA, 12, 1, None), body))


def _fresh(metadata: TopicMetadata, live: frozenset[int] = LIVE) -> PartitionEntries:
    return partition_entries(metadata, frozenset(metadata.replicas), live, None)


def test_unchanged_partitions_are_handed_on_and_changed_ones_built_anew() -> None:
    first = _topic({0: 1, 1: 2, 2: 3})
    before = _fresh(first)
    _encoded(before)  # every element now keeps its bytes
    moved = TopicMetadata(first.name, first.topic_id, first.replicas,
                          {**first.states, 1: PartitionState(3, 2, (1, 3))})
    after = partition_entries(moved, frozenset(moved.replicas), LIVE, before)
    assert after[0] is before[0] and after[2] is before[2]
    assert after[1] is not before[1]
    assert (after[1]["leader_id"], after[1]["leader_epoch"], after[1]["isr_nodes"]) == (
        3, 2, [1, 3])
    # The bytes sent are those of an answer built from nothing.
    assert _encoded(after) == _encoded(_fresh(moved))


def test_a_state_read_again_with_equal_fields_keeps_its_element() -> None:
    first = _topic({0: 1, 1: 2})
    before = _fresh(first)
    reread = _topic({0: 1, 1: 2})  # equal states, other objects (a ZooKeeper re-read)
    after = partition_entries(reread, frozenset(reread.replicas), LIVE, before)
    assert after[0] is before[0] and after[1] is before[1]


def test_a_change_of_the_live_brokers_builds_every_element_anew() -> None:
    metadata = _topic({0: 1, 1: 2})
    before = _fresh(metadata)
    after = partition_entries(metadata, frozenset(metadata.replicas), frozenset({1, 3}),
                              before)
    assert all(new is not old for new, old in zip(after, before, strict=True))
    assert after[1]["error_code"] == ErrorCode.LEADER_NOT_AVAILABLE
    assert after[0]["offline_replicas"] == [2]


def test_partitions_not_announced_are_left_out() -> None:
    metadata = _topic({0: 1, 1: 2, 2: 3})
    before = _fresh(metadata)
    after = partition_entries(metadata, frozenset({0, 2}), LIVE, before)
    assert [p["partition_index"] for p in after] == [0, 2]
    assert after[0] is before[0]
