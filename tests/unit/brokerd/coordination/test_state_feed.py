"""The controller's pushed states (LeaderAndIsr) against ZooKeeper reads: the pure rules of
:mod:`brokerd.coordination.state_feed`."""

from __future__ import annotations

import uuid

import pytest

from brokerd.coordination.state_feed import PushedTopic, StaleControllerError, StateFeed
from brokerd.coordination.znodes import PartitionState, TopicMetadata

TOPIC_ID = uuid.uuid4()


def topic(**states: PartitionState) -> TopicMetadata:
    return TopicMetadata("t", TOPIC_ID, {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)},
                         {int(p[1:]): s for p, s in states.items()})


def state(leader: int, epoch: int, version: int, isr: tuple[int, ...] = (1, 2, 3)
          ) -> PartitionState:
    return PartitionState(leader, epoch, isr, 1, version)


class Recorder:
    def __init__(self) -> None:
        self.delivered: list[TopicMetadata | None] = []

    def __call__(self, name: str, metadata: TopicMetadata | None) -> None:
        self.delivered.append(metadata)


def fed(offered: list[list[PushedTopic]] | None = None) -> tuple[StateFeed, Recorder]:
    recorder = Recorder()
    feed = StateFeed(recorder, offered.append if offered is not None else None)
    feed.read("t", topic(p0=state(1, 0, 0), p1=state(2, 0, 0), p2=state(3, 0, 0)))
    recorder.delivered.clear()
    return feed, recorder


def test_a_pushed_newer_state_is_delivered_at_once_and_offered_to_the_cache() -> None:
    offered: list[list[PushedTopic]] = []
    feed, recorder = fed(offered)
    push = [PushedTopic("t", TOPIC_ID, {0: state(2, 1, 1, (2, 3))})]
    applied = feed.pushed(2, push)
    assert applied == {"t": {0: state(2, 1, 1, (2, 3))}}
    [delivered] = recorder.delivered
    assert delivered is not None and delivered.states[0] == state(2, 1, 1, (2, 3))
    assert delivered.states[1] == state(2, 0, 0)  # the others as they were
    assert offered == [push]  # the ZooKeeper thread's cache is told too


def test_a_duplicate_or_older_push_changes_nothing() -> None:
    feed, recorder = fed()
    feed.pushed(2, [PushedTopic("t", TOPIC_ID, {0: state(2, 1, 1)})])
    recorder.delivered.clear()
    assert feed.pushed(2, [PushedTopic("t", TOPIC_ID, {0: state(2, 1, 1)})]) == {"t": {}}
    assert feed.pushed(2, [PushedTopic("t", TOPIC_ID, {0: state(1, 0, 0)})]) == {"t": {}}
    assert recorder.delivered == []
    current = feed.topic("t")
    assert current is not None and current.states[0] == state(2, 1, 1)


def test_a_push_from_an_older_controller_epoch_is_refused_whole() -> None:
    feed, recorder = fed()
    feed.pushed(3, [])
    with pytest.raises(StaleControllerError):
        feed.pushed(2, [PushedTopic("t", TOPIC_ID, {0: state(2, 1, 1)})])
    assert recorder.delivered == []


def test_a_push_for_another_incarnation_of_the_topic_is_left_to_the_watches() -> None:
    feed, recorder = fed()
    applied = feed.pushed(2, [PushedTopic("t", uuid.uuid4(), {0: state(2, 1, 1)}),
                              PushedTopic("unknown", TOPIC_ID, {0: state(2, 1, 1)})])
    assert applied == {"t": None, "unknown": None}
    assert recorder.delivered == []


def test_a_read_older_than_a_pushed_state_keeps_the_pushed_one() -> None:
    """The ZooKeeper thread may post a read answered before the controller's write."""
    feed, recorder = fed()
    feed.pushed(2, [PushedTopic("t", TOPIC_ID, {0: state(2, 1, 1)})])
    feed.read("t", topic(p0=state(1, 0, 0), p1=state(2, 0, 3), p2=state(3, 0, 0)))
    delivered = recorder.delivered[-1]
    assert delivered is not None
    assert delivered.states[0] == state(2, 1, 1)  # kept: newer than the read
    assert delivered.states[1] == state(2, 0, 3)  # the read's, newer than what was known


def test_a_topic_re_created_or_deleted_is_taken_as_read() -> None:
    feed, recorder = fed()
    feed.pushed(2, [PushedTopic("t", TOPIC_ID, {0: state(2, 1, 5)})])
    again = TopicMetadata("t", uuid.uuid4(), {0: (1,)}, {0: state(1, 0, 0, (1,))})
    feed.read("t", again)
    assert recorder.delivered[-1] is again
    feed.read("t", None)
    assert recorder.delivered[-1] is None and feed.topic("t") is None


def test_what_this_controller_wrote_is_delivered_here_and_pushed_once() -> None:
    feed, recorder = fed()
    pushes: list[tuple[int, list[tuple[TopicMetadata, dict[int, PartitionState]]]]] = []
    feed.push = lambda epoch, written: pushes.append((epoch, written))
    fresh = topic(p0=state(2, 1, 1), p1=state(2, 0, 0), p2=state(3, 0, 0))
    other = TopicMetadata("u", uuid.uuid4(), {0: (1,)}, {0: state(1, 0, 4, (1,))})
    feed.written(4, [(fresh, {0: state(2, 1, 1)}), (other, {})])
    assert [m.name for m in recorder.delivered if m is not None] == ["t", "u"]
    assert pushes == [(4, [(fresh, {0: state(2, 1, 1)})])]  # re-reads are not pushed

