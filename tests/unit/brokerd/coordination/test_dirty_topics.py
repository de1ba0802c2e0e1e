"""DirtyTopics: one flush per burst, a settling state change waits, an urgent mark does not."""

from __future__ import annotations

import threading

from brokerd.coordination.dirty_topics import DirtyTopics


def test_a_burst_queues_one_flush_and_take_starts_the_next_burst() -> None:
    flushes: list[int] = []
    dirty = DirtyTopics(lambda: flushes.append(1))
    dirty.mark("a", 0)
    dirty.mark("a", 1)
    dirty.mark("b", -1)
    assert flushes == [1]
    assert dirty.take() == {"a": {0, 1}, "b": {-1}}
    dirty.mark("a", 2)
    assert flushes == [1, 1] and dirty.marked("a") == {2}


def test_settling_changes_flush_after_the_settle_time_unless_an_urgent_mark_comes_first(
) -> None:
    flushed = threading.Event()
    dirty = DirtyTopics(flushed.set, settle_s=0.05)
    dirty.mark("a", 0, settle=True)
    dirty.mark("a", 1, settle=True)
    assert not flushed.is_set()
    assert flushed.wait(5)
    assert dirty.take() == {"a": {0, 1}}

    flushed.clear()
    urgent = DirtyTopics(flushed.set, settle_s=60)
    urgent.mark("a", 0, settle=True)
    assert not flushed.is_set()
    urgent.mark("a", 1)  # a creation: the flush goes now and takes the settling mark too
    assert flushed.is_set() and urgent.take() == {"a": {0, 1}}
