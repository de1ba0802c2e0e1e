"""The pure replication rules: caught-up tracking, high watermark, ISR changes, truncation."""

from __future__ import annotations

from brokerd.replication.rules import (
    FollowerState,
    follower_high_watermark,
    leader_high_watermark,
    may_join_isr,
    out_of_sync,
    record_fetch,
    reset_for_leadership,
    truncation_offset,
)


def test_a_fetch_at_the_leader_log_end_is_caught_up_now() -> None:
    state = record_fetch(FollowerState(), fetch_offset=10, leader_leo=10, now_ms=500)
    assert state == FollowerState(10, 500, 10, 500)


def test_a_fetch_reaching_the_previous_fetch_leo_is_caught_up_as_of_that_fetch() -> None:
    first = record_fetch(FollowerState(), fetch_offset=5, leader_leo=10, now_ms=100)
    assert first.last_caught_up_ms == 0  # behind, never caught up before
    second = record_fetch(first, fetch_offset=10, leader_leo=20, now_ms=200)
    assert second.last_caught_up_ms == 100  # it holds everything that existed at 100
    third = record_fetch(second, fetch_offset=15, leader_leo=30, now_ms=300)
    assert third.last_caught_up_ms == 100  # still short of 20: no progress credited
    assert third.log_end_offset == 15 and third.last_fetch_leader_leo == 30


def test_caught_up_time_never_goes_back() -> None:
    state = FollowerState(10, 900, 10, 400)
    assert record_fetch(state, 10, 12, 1000).last_caught_up_ms == 900


def test_isr_members_get_a_full_lag_allowance_from_becoming_leader() -> None:
    assert reset_for_leadership(FollowerState(7, 1, 7, 1), True, 5000) == FollowerState(
        last_caught_up_ms=5000)
    assert reset_for_leadership(FollowerState(7, 1, 7, 1), False, 5000) == FollowerState()


def test_high_watermark_is_the_minimum_leo_of_the_isr_and_never_moves_back() -> None:
    followers = {2: FollowerState(log_end_offset=7), 3: FollowerState(log_end_offset=4)}
    assert leader_high_watermark(0, 1, 10, (1, 2, 3), followers) == 4
    assert leader_high_watermark(0, 1, 10, (1, 2), followers) == 7  # 3 outside the ISR
    assert leader_high_watermark(0, 1, 10, (1,), followers) == 10
    assert leader_high_watermark(6, 1, 10, (1, 2, 3), followers) == 6
    assert leader_high_watermark(3, 1, 10, (1, 2, 4), followers) == 3  # 4 never fetched


def test_followers_lagging_longer_than_the_max_leave_the_isr() -> None:
    followers = {2: FollowerState(last_caught_up_ms=1000), 3: FollowerState(last_caught_up_ms=3500)}
    assert out_of_sync(1, (1, 2, 3), followers, 4000, 2000) == (2,)
    assert out_of_sync(1, (1, 2, 3), followers, 3000, 2000) == ()
    assert out_of_sync(1, (1, 2, 3, 4), followers, 3000, 2000) == (4,)  # never fetched


def test_a_dead_brokers_replica_is_left_to_the_controller_for_one_more_lag_time() -> None:
    followers = {2: FollowerState(last_caught_up_ms=1000), 3: FollowerState(last_caught_up_ms=1000)}
    alive = {1, 3}.__contains__  # broker 2's registration is gone
    assert out_of_sync(1, (1, 2, 3), followers, 4000, 2000, alive) == (3,)
    assert out_of_sync(1, (1, 2, 3), followers, 5000, 2000, alive) == (3,)
    # Twice the lag time: the controller never removed it, so the leader does.
    assert out_of_sync(1, (1, 2, 3), followers, 5001, 2000, alive) == (2, 3)


def test_a_follower_joins_at_the_high_watermark_and_the_epoch_start() -> None:
    assert may_join_isr(FollowerState(log_end_offset=10), 10, 8)
    assert not may_join_isr(FollowerState(log_end_offset=9), 10, 8)
    assert not may_join_isr(FollowerState(log_end_offset=10), 10, 12)


def test_follower_high_watermark_is_capped_by_its_own_log_end() -> None:
    assert follower_high_watermark(50, 40) == 40
    assert follower_high_watermark(30, 40) == 30


def test_truncation_same_epoch_back_cuts_at_the_leaders_end() -> None:
    assert truncation_offset(5, 5, 80, 100, 100, 60) == 80
    assert truncation_offset(5, 5, 120, 100, 100, 60) == 100  # never past our own end


def test_truncation_older_epoch_back_cuts_at_the_smaller_end_of_that_epoch() -> None:
    # We wrote epoch 5 the leader never saw; both had epoch 3, ending at 70 there, 75 here.
    assert truncation_offset(5, 3, 70, 100, 75, 60) == 70
    assert truncation_offset(5, 3, 90, 100, 75, 60) == 75


def test_truncation_undefined_answer_keeps_only_the_high_watermark() -> None:
    assert truncation_offset(5, -1, -1, 100, 100, 60) == 60
