"""Flushes by policy visit only the logs with something to flush (the unflushed set)."""

from pathlib import Path

import pytest

from brokerd.storage import Log

from .conftest import FakeClock, batch
from .helpers import manager


def forbid_policy_checks(monkeypatch: pytest.MonkeyPatch, log: Log) -> None:
    """Make any look at ``log``'s flush state fail the test."""
    def visited(*_: object) -> bool:
        raise AssertionError(f"idle log {log.directory.name} was visited")
    monkeypatch.setattr(log, "flush_due", visited)
    monkeypatch.setattr(log, "flush_pending", visited)


def test_idle_logs_are_not_visited(tmp_path: Path, clock: FakeClock,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    logs = manager([tmp_path], clock, flush_messages=1)
    idle = [logs.get_or_create("idle", p) for p in range(3)]
    busy = logs.get_or_create("busy", 0)
    assert logs.logs_due_for_flush(clock.now_ms) == []  # the first round forgets them
    for log in idle:
        forbid_policy_checks(monkeypatch, log)
    busy.append_as_leader(batch(1), 0)
    assert logs.logs_due_for_flush(clock.now_ms) == [busy]
    busy.flush()
    assert logs.logs_due_for_flush(clock.now_ms) == []
    forbid_policy_checks(monkeypatch, busy)  # flushed: it left the set too
    clock.advance(10_000)
    assert logs.logs_due_for_flush(clock.now_ms) == []


def test_flush_messages_asks_for_a_flush_after_that_many_records(
        tmp_path: Path, clock: FakeClock) -> None:
    logs = manager([tmp_path], clock, flush_messages=3)
    log = logs.get_or_create("t", 0)
    log.append_as_leader(batch(2), 0)
    assert logs.logs_due_for_flush(clock.now_ms) == []
    log.append_as_leader(batch(1), 0)
    assert logs.logs_due_for_flush(clock.now_ms) == [log]
    log.flush()
    assert log.recovery_point == 3 and logs.logs_due_for_flush(clock.now_ms) == []


def test_flush_ms_asks_for_a_flush_once_that_long_since_the_last(
        tmp_path: Path, clock: FakeClock) -> None:
    logs = manager([tmp_path], clock, flush_ms=1000)
    log = logs.get_or_create("t", 0)
    clock.advance(5000)
    assert logs.logs_due_for_flush(clock.now_ms) == []  # nothing appended: nothing due
    log.append_as_leader(batch(1), 0)
    assert logs.logs_due_for_flush(clock.now_ms) == [log]  # Kafka: time since last flush
    log.flush()
    log.append_as_leader(batch(1), 0)
    clock.advance(500)
    assert logs.logs_due_for_flush(clock.now_ms) == []
    clock.advance(500)
    assert logs.logs_due_for_flush(clock.now_ms) == [log]
    log.flush()
    clock.advance(5000)
    assert logs.logs_due_for_flush(clock.now_ms) == []


def test_a_rolled_segment_is_flushed_whatever_the_policy(tmp_path: Path,
                                                         clock: FakeClock) -> None:
    logs = manager([tmp_path], clock)  # flush.messages and flush.ms: never
    log = logs.get_or_create("t", 0)
    log.append_as_leader(batch(2), 0)
    assert logs.logs_due_for_flush(clock.now_ms) == []
    log.roll()
    assert logs.logs_due_for_flush(clock.now_ms) == [log]
    log.flush()
    assert log.recovery_point == 2 and logs.logs_due_for_flush(clock.now_ms) == []


def test_a_deleted_log_leaves_the_set(tmp_path: Path, clock: FakeClock) -> None:
    logs = manager([tmp_path], clock, flush_messages=1)
    log = logs.get_or_create("t", 0)
    log.append_as_leader(batch(1), 0)
    assert logs.delete("t", 0)
    assert logs.logs_due_for_flush(clock.now_ms) == []
    again = logs.get_or_create("t", 0)  # the same partition created anew reports itself
    again.append_as_leader(batch(1), 0)
    assert logs.logs_due_for_flush(clock.now_ms) == [again]

