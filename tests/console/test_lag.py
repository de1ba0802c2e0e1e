"""Burrow's status rules, the lag formula, commit inference and the time-lag estimate."""

from __future__ import annotations

import pytest

from dashboard.lag import (
    WINDOW,
    Commit,
    GroupLag,
    PartitionOffsets,
    Status,
    consumption_rate,
    evaluate_group,
    group_lag_from_json,
    group_lag_to_json,
    group_status,
    next_window,
    partition_lag,
    partition_status,
    preview_lag,
    time_lag_seconds,
)


def commits(*points: tuple[float, int, int]) -> list[Commit]:
    return [Commit(t, offset, lag) for t, offset, lag in points]


def test_lag_is_high_watermark_minus_the_larger_of_committed_and_log_start() -> None:
    assert partition_lag(committed=40, log_start=10, high_watermark=100) == 60
    assert partition_lag(committed=5, log_start=10, high_watermark=100) == 90  # records deleted
    assert partition_lag(committed=120, log_start=0, high_watermark=100) == 0


def test_ok_when_the_lag_was_zero_anywhere_in_the_window() -> None:
    window = commits((0, 10, 5), (10, 10, 0), (20, 10, 7))
    assert partition_status(window, current_lag=7, now=21) is Status.OK


def test_ok_when_the_current_lag_is_zero_even_if_stopped() -> None:
    window = commits((0, 10, 5), (10, 11, 4))
    assert partition_status(window, current_lag=0, now=1000) is Status.OK


def test_rewind_when_an_offset_goes_backwards() -> None:
    window = commits((0, 50, 5), (10, 40, 15), (20, 45, 10))
    assert partition_status(window, current_lag=10, now=21) is Status.REWIND


def test_stop_when_silent_longer_than_the_window_spans() -> None:
    window = commits((0, 10, 5), (10, 12, 4), (20, 14, 3))
    assert partition_status(window, current_lag=3, now=40) is Status.OK  # exactly the span
    assert partition_status(window, current_lag=3, now=41) is Status.STOP


def test_stall_when_committing_the_same_offset_with_lag() -> None:
    window = commits((0, 10, 5), (10, 10, 6), (20, 10, 8))
    assert partition_status(window, current_lag=8, now=21) is Status.STALL


def test_warn_when_moving_but_lag_never_decreases() -> None:
    window = commits((0, 10, 5), (10, 20, 5), (20, 30, 9))
    assert partition_status(window, current_lag=9, now=21) is Status.WARN


def test_ok_when_moving_and_lag_decreases_somewhere() -> None:
    window = commits((0, 10, 5), (10, 20, 9), (20, 30, 4))
    assert partition_status(window, current_lag=4, now=21) is Status.OK


def test_empty_window_is_ok() -> None:
    assert partition_status([], current_lag=100, now=0) is Status.OK


def test_a_single_commit_can_stop_but_not_stall() -> None:
    window = commits((10, 10, 5))
    assert partition_status(window, current_lag=5, now=10) is Status.OK
    assert partition_status(window, current_lag=5, now=11) is Status.STOP


def test_group_is_its_worst_partition_with_errors_rolled_up() -> None:
    assert group_status([Status.OK, Status.WARN]) is Status.WARN
    assert group_status([Status.OK, Status.STALL, Status.WARN]) is Status.ERR
    assert group_status([Status.STOP]) is Status.ERR
    assert group_status([Status.REWIND]) is Status.ERR
    assert group_status([]) is Status.OK


def test_window_keeps_moves_and_live_commits_and_only_the_last_ten() -> None:
    window: tuple[Commit, ...] = ()
    for t in range(15):
        window = next_window(window, Commit(t, t, 1), group_active=False)
    assert len(window) == WINDOW and window[0].offset == 5
    # no move and no members: not a commit
    assert next_window(window, Commit(99, 14, 1), group_active=False) == window
    assert next_window(window, Commit(99, 14, 1), group_active=True)[-1].timestamp == 99


def test_consumption_rate_and_time_lag() -> None:
    assert consumption_rate([(0.0, 100)]) is None
    assert consumption_rate([(0.0, 100), (10.0, 600)]) == 50.0
    assert consumption_rate([(0.0, 600), (10.0, 100)]) == 0.0  # rewound: not consuming
    assert time_lag_seconds(1000, 50.0) == 20.0
    assert time_lag_seconds(0, None) == 0.0
    assert time_lag_seconds(1000, 0.0) is None
    assert time_lag_seconds(1000, None) is None


def offsets(committed: int, high_watermark: int = 100) -> list[PartitionOffsets]:
    return [PartitionOffsets("orders", 0, committed, 0, high_watermark)]


def test_a_consumer_that_goes_away_turns_from_ok_to_stop() -> None:
    state: GroupLag | None = None
    for t, committed in enumerate((0, 20, 40, 50)):
        state = evaluate_group(state, offsets(committed), group_active=True, now=float(t * 5))
    assert state is not None and state.status is Status.OK
    assert state.total_lag == 50 and state.max_lag == 50
    assert state.rate == pytest.approx(50 / 15)
    assert state.time_lag_s == pytest.approx(15.0)
    state = evaluate_group(state, offsets(50), group_active=False, now=35.0)
    assert state.partitions[0].status is Status.STOP  # silent 20 s > the window's 15 s span
    assert state.status is Status.ERR
    assert state.time_lag_s is None  # no members: not catching up, whatever the recent rate
    assert state.rate == pytest.approx(50 / 35)


def test_a_live_group_that_consumed_nothing_for_a_minute_is_not_catching_up() -> None:
    state = evaluate_group(None, offsets(10), group_active=True, now=0.0)
    state = evaluate_group(state, offsets(30), group_active=True, now=10.0)
    assert state.time_lag_s == pytest.approx(70 / 2)
    for now in (50.0, 100.0):
        state = evaluate_group(state, offsets(30), group_active=True, now=now)
    assert state.rate == 0.0 and state.time_lag_s is None


def test_a_live_consumer_that_stops_moving_stalls() -> None:
    state: GroupLag | None = None
    for t, committed in enumerate((0, 20, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30)):
        state = evaluate_group(state, offsets(committed), group_active=True, now=float(t))
    assert state is not None and state.partitions[0].status is Status.STALL


def test_stored_form_round_trips() -> None:
    state = evaluate_group(None, offsets(10), group_active=True, now=1.0)
    state = evaluate_group(state, offsets(30), group_active=True, now=6.0)
    assert group_lag_from_json(group_lag_to_json(state)) == state


def test_preview_moves_only_the_targeted_partitions() -> None:
    state = evaluate_group(None, offsets(10) + [PartitionOffsets("orders", 1, 5, 0, 50)],
                           group_active=False, now=0.0)
    preview = preview_lag(state.partitions, {("orders", 0): 100})
    assert [(p.committed, p.lag) for p in preview] == [(100, 0), (5, 45)]


def test_partitions_never_committed_on_count_from_their_log_start() -> None:
    """A group committed on 4 of 6 partitions of 5,000 records each: the 2 others count whole
    (their 10,000 records are unread too), marked as uncommitted."""
    from dashboard.lag import evaluate_group
    from dashboard.snapshots import observed_offsets

    bounds = {("acme.orders", p): (0, 5_000) for p in range(6)}
    bounds[("acme.other", 0)] = (0, 99)  # a topic the group does not consume
    committed = {("acme.orders", 0): 1_000, ("acme.orders", 1): 1_900,
                 ("acme.orders", 2): 4_000, ("acme.orders", 3): 5_000}
    observed = observed_offsets(committed, bounds, set(), "acme")
    assert [(o.topic, o.partition, o.committed) for o in observed] == [
        ("orders", 0, 1_000), ("orders", 1, 1_900), ("orders", 2, 4_000), ("orders", 3, 5_000),
        ("orders", 4, None), ("orders", 5, None)]
    group = evaluate_group(None, observed, group_active=False, now=100.0)
    assert group.total_lag == 4_000 + 3_100 + 1_000 + 0 + 5_000 + 5_000
    assert [p.uncommitted for p in group.partitions] == [False] * 4 + [True] * 2
    assert group.partitions[4].lag == 5_000 and group.partitions[4].window == ()
    assert group.progress[-1][1] == 1_000 + 1_900 + 4_000 + 5_000  # positions: log start 0
    stored = group_lag_from_json(group_lag_to_json(group))
    assert stored.partitions[5].committed is None and stored.partitions[5].uncommitted


def test_a_member_assigned_a_topic_without_commits_shows_its_partitions() -> None:
    from dashboard.snapshots import observed_offsets

    bounds = {("acme.new", 0): (10, 50), ("acme.new", 1): (0, 7)}
    observed = observed_offsets({}, bounds, {("acme.new", 1)}, "acme")
    assert [(o.partition, o.committed, o.log_start) for o in observed] == [(0, None, 10),
                                                                           (1, None, 0)]
