"""Deletion decisions read a wall clock that ignores forward steps, follows backward ones,
and catches up with a lasting difference at 1 % of real time."""

from __future__ import annotations

from brokerd.server.retention_clock import SLEW, RetentionClock

HOUR_MS = 3_600_000
T0 = 1_800_000_000_000


def test_it_is_the_wall_clock_while_the_wall_clock_behaves() -> None:
    clock = RetentionClock(T0, 0)
    assert [clock.now_ms(T0 + t, t) for t in (0, 1_000, 60_000)] == [T0, T0 + 1_000, T0 + 60_000]


def test_a_forward_step_is_followed_only_at_the_slew_rate() -> None:
    clock = RetentionClock(T0, 0)
    assert clock.now_ms(T0 + 1_000 + HOUR_MS, 1_000) == T0 + 1_000 + int(1_000 * SLEW)
    minute_later = clock.now_ms(T0 + 61_000 + HOUR_MS, 61_000)
    assert minute_later == T0 + 61_000 + int(61_000 * SLEW)
    # the step never shows up at once, however long it lasts: 100 h of uptime to catch up
    assert clock.now_ms(T0 + 30 * HOUR_MS, 29 * HOUR_MS) < T0 + 30 * HOUR_MS


def test_a_backward_step_is_followed_at_once_and_the_step_back_forward_slowly() -> None:
    clock = RetentionClock(T0, 0)
    assert clock.now_ms(T0 + 1_000 - HOUR_MS, 1_000) == T0 + 1_000 - HOUR_MS
    # the clock is put right again (a forward step): followed at the slew rate only
    assert clock.now_ms(T0 + 2_000, 2_000) == T0 + 2_000 - HOUR_MS + int(1_000 * SLEW)


def test_a_monotonic_clock_that_does_not_move_holds_the_time() -> None:
    clock = RetentionClock(T0, 500)
    assert clock.now_ms(T0 + HOUR_MS, 500) == T0
    assert clock.now_ms(T0 + HOUR_MS, 400) == T0  # never backwards by the monotonic clock
