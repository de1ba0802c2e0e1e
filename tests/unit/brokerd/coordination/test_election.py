"""The controller's pure leadership rules."""

from __future__ import annotations

from brokerd.coordination.election import (
    NO_LEADER,
    Requested,
    altered_reassignment,
    elect_on_change,
    invalid_target,
    preferred_leader_move,
    reassignment_ready,
    reassignment_replicas,
    reassignment_target,
    requested_election,
    state_after_reassignment,
    state_within,
)
from brokerd.coordination.znodes import PartitionState

EPOCH = 7


def state(leader: int, isr: tuple[int, ...], leader_epoch: int = 3) -> PartitionState:
    return PartitionState(leader, leader_epoch, isr, controller_epoch=1, zk_version=5)


def test_dead_leader_first_live_isr_replica_in_assignment_order_leads() -> None:
    new = elect_on_change((1, 3, 2), state(1, (2, 1, 3)), {2, 3}, {2, 3}, EPOCH)
    assert new == PartitionState(3, 4, (2, 3), EPOCH, 5)


def test_replica_outside_the_isr_is_not_elected() -> None:
    new = elect_on_change((1, 2, 3), state(1, (1, 3)), {2, 3}, {2, 3}, EPOCH)
    assert new is not None and (new.leader, new.isr) == (3, (3,))


def test_dead_follower_leaves_the_isr_without_an_epoch_bump() -> None:
    new = elect_on_change((1, 2, 3), state(1, (1, 2, 3)), {1, 3}, {1, 3}, EPOCH)
    assert new == PartitionState(1, 3, (1, 3), EPOCH, 5)
    assert elect_on_change((1, 2, 3), state(1, (1, 3)), {1, 3}, {1, 3}, EPOCH) is None


def test_no_live_isr_member_goes_offline_keeping_the_last_isr() -> None:
    new = elect_on_change((1, 2), state(1, (1,)), {2}, {2}, EPOCH)
    assert new == PartitionState(NO_LEADER, 4, (1,), EPOCH, 5)
    assert elect_on_change((1, 2), new, {2}, {2}, EPOCH) is None


def test_unclean_election_takes_the_first_live_replica_alone() -> None:
    new = elect_on_change((1, 3, 2), state(1, (1,)), {2, 3}, {2, 3}, EPOCH, unclean=True)
    assert new == PartitionState(3, 4, (3,), EPOCH, 5)


def test_offline_partition_comes_back_with_its_last_isr_member() -> None:
    offline = PartitionState(NO_LEADER, 4, (1,), EPOCH, 6)
    new = elect_on_change((1, 2), offline, {1, 2}, {1, 2}, EPOCH)
    assert new == PartitionState(1, 5, (1,), EPOCH, 6)


def test_shutting_down_leader_hands_over_or_keeps_leading_alone() -> None:
    moved = elect_on_change((1, 2), state(1, (1, 2)), {2}, {1, 2}, EPOCH)
    assert moved is not None and (moved.leader, moved.isr, moved.leader_epoch) == (2, (2,), 4)
    assert elect_on_change((1, 2), state(1, (1,)), {2}, {1, 2}, EPOCH) is None


def test_preferred_leader_returns_only_when_in_sync_and_eligible() -> None:
    new = preferred_leader_move((1, 2, 3), state(2, (2, 1)), {1, 2, 3}, EPOCH)
    assert new == PartitionState(1, 4, (2, 1), EPOCH, 5)
    assert preferred_leader_move((1, 2, 3), state(2, (2, 3)), {1, 2, 3}, EPOCH) is None
    assert preferred_leader_move((1, 2, 3), state(2, (2, 1)), {2, 3}, EPOCH) is None
    assert preferred_leader_move((1, 2, 3), state(1, (1, 2)), {1, 2, 3}, EPOCH) is None


def test_a_requested_preferred_election_names_why_it_did_not_happen() -> None:
    everyone = {1, 2, 3}
    assert requested_election(False, (1, 2, 3), state(2, (2, 1)), everyone, everyone,
                              EPOCH) == (Requested.ELECTED, PartitionState(1, 4, (2, 1), EPOCH, 5))
    assert requested_election(False, (1, 2, 3), state(1, (1, 2)), everyone, everyone,
                              EPOCH) == (Requested.NOT_NEEDED, None)
    # Out of the ISR, or not eligible (dead, shutting down): Kafka's
    # PREFERRED_LEADER_NOT_AVAILABLE.
    assert requested_election(False, (1, 2, 3), state(2, (2, 3)), everyone, everyone,
                              EPOCH) == (Requested.NOT_AVAILABLE, None)
    assert requested_election(False, (1, 2, 3), state(2, (2, 1)), {2, 3}, everyone,
                              EPOCH) == (Requested.NOT_AVAILABLE, None)


def test_a_requested_unclean_election_acts_only_on_a_partition_without_a_live_leader() -> None:
    assert requested_election(True, (1, 2), state(1, (1,)), {1, 2}, {1, 2},
                              EPOCH) == (Requested.NOT_NEEDED, None)
    # Leader 1 is gone and so is the whole ISR: the first eligible replica leads alone,
    # whatever the topic's own unclean.leader.election.enable says.
    assert requested_election(True, (1, 2, 3), state(NO_LEADER, (1,)), {3, 2}, {2, 3},
                              EPOCH) == (Requested.ELECTED, PartitionState(2, 4, (2,), EPOCH, 5))
    # An eligible ISR member is preferred to an unclean choice.
    outcome, new = requested_election(True, (1, 2, 3), state(1, (1, 3)), {2, 3}, {2, 3}, EPOCH)
    assert outcome is Requested.ELECTED and new is not None and new.leader == 3
    assert requested_election(True, (1, 2), state(NO_LEADER, (1,)), {3}, {3},
                              EPOCH) == (Requested.NOT_AVAILABLE, None)


def test_reassignment_steps() -> None:
    replicas, adding, removing = reassignment_replicas((1, 2, 3), (4, 2, 5))
    assert (replicas, adding, removing) == ((4, 2, 5, 1, 3), (4, 5), (1, 3))
    target = reassignment_target(replicas, removing)
    assert target == (4, 2, 5)
    assert not reassignment_ready(target, state(1, (1, 2, 3, 4)))
    ready = state(1, (1, 2, 3, 4, 5))
    assert reassignment_ready(target, ready)
    final = state_after_reassignment(target, ready, {1, 2, 3, 4, 5}, EPOCH)
    assert final == PartitionState(4, 4, (2, 4, 5), EPOCH, 5)


def test_reassignment_keeps_a_leader_that_stays_in_the_target() -> None:
    final = state_after_reassignment((2, 4), state(2, (1, 2, 4)), {1, 2, 4}, EPOCH)
    assert final == PartitionState(2, 3, (2, 4), EPOCH, 5)
    assert state_after_reassignment((2, 4), state(2, (2, 4)), {2, 4}, EPOCH) is None


def test_a_new_target_replaces_the_reassignment_in_progress() -> None:
    """1,2,3 -> 4,2,5 in progress (union 4,2,5,1,3); a new target 6,2 starts from the
    original replicas 1,2,3: the new replicas 4 and 5 of the first target are dropped."""
    assert altered_reassignment((4, 2, 5, 1, 3), (4, 5), (1, 3), (6, 2)) == (
        (6, 2, 1, 3), (6,), (1, 3))
    # With nothing in progress it is an ordinary start.
    assert altered_reassignment((1, 2, 3), (), (), (2, 3, 4)) == ((2, 3, 4, 1), (4,), (1,))
    # Back to the original replicas: nothing left to add or remove.
    assert altered_reassignment((4, 1, 2), (4,), (2,), (1, 2)) == ((1, 2), (), ())


def test_a_cancellation_goes_back_to_the_original_replicas() -> None:
    assert altered_reassignment((4, 2, 5, 1, 3), (4, 5), (1, 3), None) == ((2, 1, 3), (), ())
    assert altered_reassignment((1, 2, 3), (), (), None) is None  # nothing to cancel


def test_a_requested_replica_list_must_name_distinct_registered_brokers() -> None:
    live = {1, 2, 3}
    assert invalid_target((3, 1), live) is None
    assert invalid_target((), live) == "empty replica list"
    assert invalid_target((1, 1), live) == "duplicate broker ids in [1, 1]"
    assert invalid_target((1, 9, 8), live) == "brokers [8, 9] are not registered"


def test_a_state_stays_within_a_reduced_assignment() -> None:
    everyone = {1, 2, 3, 4}
    # Dropped replica 4 had joined the ISR: it leaves, the leader stays, no epoch bump.
    assert state_within((1, 2, 3), state(1, (1, 2, 4)), everyone, EPOCH) == (
        True, PartitionState(1, 3, (1, 2), EPOCH, 5))
    assert state_within((1, 2, 3), state(1, (1, 2)), everyone, EPOCH) == (True, None)
    # The leader itself is dropped: the first eligible in-sync replica kept takes over.
    assert state_within((1, 2, 3), state(4, (4, 3, 2)), {2, 3, 4}, EPOCH) == (
        True, PartitionState(2, 4, (3, 2), EPOCH, 5))
    # ... and when none can, the change is refused.
    assert state_within((1, 2), state(4, (4, 3)), everyone, EPOCH) == (False, None)
