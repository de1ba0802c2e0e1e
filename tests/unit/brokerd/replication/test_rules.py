"""The pure replication rules: caught-up tracking, high watermark, ISR changes, truncation."""

from __future__ import annotations

import pytest

from brokerd.replication.rules import (
    FollowerState,
    diverging_epoch,
    follower_high_watermark,
    leader_high_watermark,
    may_join_isr,
    out_of_sync,
    record_fetch,
    reset_for_leadership,
    truncates_on_fetch,
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


def test_a_fetch_diverges_where_the_leader_never_wrote_its_epoch_or_ended_it_sooner() -> None:
    # (last fetched epoch, fetch offset, the leader's answer for that epoch)
    assert diverging_epoch(5, 100, 5, 120) is None  # the leader's current epoch, further on
    assert diverging_epoch(5, 100, 5, 100) is None  # exactly at the leader's end
    assert diverging_epoch(4, 100, 4, 100) is None  # an older epoch that ended right there
    assert diverging_epoch(4, 100, 4, 90) == (4, 90)  # it ended sooner: our 90-99 differ
    assert diverging_epoch(5, 100, 3, 120) == (3, 120)  # the leader never wrote epoch 5
    assert diverging_epoch(5, 100, -1, -1) == (-1, -1)  # older than all the leader knows
    assert diverging_epoch(-1, 100, -1, -1) is None  # no epoch given (v11 and older, kcat)


@pytest.mark.parametrize(("version", "on_fetch"), [
    ("3.9", True), ("2.7", True), ("2.7-IV1", True), ("2.8.1", True), ("3.0-IV1", True),
    ("2.7-IV0", False), ("2.6", False), ("0.10.2", False), (" 2.6-IV0 ", False)])
def test_followers_truncate_on_fetch_from_kafkas_inter_broker_protocol_2_7_iv1(
        version: str, on_fetch: bool) -> None:
    assert truncates_on_fetch(version) is on_fetch


@pytest.mark.parametrize("version", ["", "3", "latest", "2.7-IV", "v3.9", "3.9-RC1"])
def test_an_inter_broker_protocol_version_that_is_no_kafka_version_is_refused(
        version: str) -> None:
    with pytest.raises(ValueError, match="inter.broker.protocol.version"):
        truncates_on_fetch(version)
