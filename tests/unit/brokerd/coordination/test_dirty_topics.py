"""DirtyTopics: one flush per burst; a settling state change waits for the next look (or an
urgent flush), one the controller pushes here waits longer for its push."""

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


def test_settling_changes_flush_at_the_next_look_or_with_an_urgent_mark() -> None:
    flushed = threading.Event()
    dirty = DirtyTopics(flushed.set, settle_s=0.05)
    dirty.settle("a", 0, pushed_here=False)
    dirty.settle("a", 1, pushed_here=False)
    assert not flushed.is_set()
    assert flushed.wait(5)
    assert dirty.take() == {"a": {0, 1}}

    flushed.clear()
    urgent = DirtyTopics(flushed.set, settle_s=60)
    urgent.settle("a", 0, pushed_here=False)
    urgent.settle("a", 2, pushed_here=True)
    assert not flushed.is_set()
    urgent.mark("a", 1)  # a creation: flushed now, with the change that waits for no push
    assert flushed.is_set() and urgent.take() == {"a": {0, 1}}
    assert urgent.marked("a") == {2}


def test_a_change_pushed_here_waits_for_its_push_and_is_read_after_the_wait() -> None:
    """The clock is the test's: the looks (every 10 ms of real time) see only the times it
    sets, so what is due depends on nothing but them."""
    now = [0.0]
    flushed = threading.Event()
    dirty = DirtyTopics(flushed.set, settle_s=0.01, push_wait_s=2.5, clock=lambda: now[0])
    dirty.settle("a", 0, pushed_here=True)
    assert not flushed.wait(0.2)  # ~20 looks at t=0: it waits for the push
    dirty.settle("b", 0, pushed_here=False)  # never pushed here: read at the next look
    assert flushed.wait(5)
    assert dirty.take() == {"b": {0}}
    assert dirty.marked("a") == {0}

    flushed.clear()
    now[0] = 2.0
    dirty.settle("a", 1, pushed_here=True)
    now[0] = 2.5  # partition 0 has waited the whole time; partition 1 only 0.5 s
    assert flushed.wait(5)
    assert dirty.take() == {"a": {0}}
    assert dirty.marked("a") == {1}

    flushed.clear()
    now[0] = 4.5
    assert flushed.wait(5)
    assert dirty.take() == {"a": {1}}


def test_the_watch_report_marks_creations_urgently_and_asks_which_changes_are_pushed_here(
) -> None:
    flushes: list[int] = []
    dirty = DirtyTopics(lambda: flushes.append(1),
                        pushed_here=lambda name, partition: partition == 1, settle_s=60)
    dirty.state_changed("a", 0, changed=False)  # created: its version is unknown
    assert flushes == [1] and dirty.take() == {"a": {0}}
    dirty.state_changed("a", 1, changed=True)  # pushed here: waits for its push
    dirty.state_changed("a", 2, changed=True)  # not pushed here: settles
    dirty.mark("b", -1)
    assert dirty.take() == {"a": {2}, "b": {-1}}
    assert dirty.marked("a") == {1}
