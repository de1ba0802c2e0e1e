"""The reconciliation state machine (Kafka's CurrentAssignmentBuilder), pure."""

from __future__ import annotations

import uuid

from brokerd.groups.consumer.group import MemberState, Reconciliation
from brokerd.groups.consumer.reconcile import reconcile

T = uuid.UUID(int=1)


def parts(*indexes: int) -> frozenset[tuple[uuid.UUID, int]]:
    return frozenset((T, i) for i in indexes)


def free(*_: object) -> bool:
    return True


def test_stable_member_at_the_target_epoch_is_left_alone() -> None:
    current = Reconciliation(3, 2, MemberState.STABLE, parts(0, 1))
    assert reconcile(current, parts(0, 1), 3, None, free) is current


def test_new_partitions_that_are_free_are_given_with_the_new_epoch() -> None:
    current = Reconciliation(0, -1, MemberState.STABLE, parts())
    nxt = reconcile(current, parts(0, 1), 1, parts(), free)
    assert nxt == Reconciliation(1, 0, MemberState.STABLE, parts(0, 1), parts())


def test_partitions_to_give_up_are_revoked_first_at_the_same_epoch() -> None:
    current = Reconciliation(1, 0, MemberState.STABLE, parts(0, 1, 2))
    nxt = reconcile(current, parts(0, 1), 2, None, free)
    assert nxt == Reconciliation(1, 0, MemberState.UNREVOKED_PARTITIONS, parts(0, 1), parts(2))
    # Still owning partition 2: nothing moves, not even the epoch.
    assert reconcile(nxt, parts(0, 1), 2, parts(0, 1, 2), free) == nxt
    assert reconcile(nxt, parts(0, 1), 2, None, free) == nxt
    # Released: the member moves to the target epoch.
    done = reconcile(nxt, parts(0, 1), 2, parts(0, 1), free)
    assert done == Reconciliation(2, 1, MemberState.STABLE, parts(0, 1), parts())


def test_a_partition_still_held_elsewhere_is_not_given_until_released() -> None:
    held = {(T, 2)}
    current = Reconciliation(1, 0, MemberState.STABLE, parts(0))
    nxt = reconcile(current, parts(0, 2), 2, None, lambda p: p not in held)
    assert nxt == Reconciliation(2, 1, MemberState.UNRELEASED_PARTITIONS, parts(0), parts())
    assert reconcile(nxt, parts(0, 2), 2, None, lambda p: p not in held) == nxt
    held.clear()
    assert reconcile(nxt, parts(0, 2), 2, None, lambda p: p not in held) == Reconciliation(
        2, 1, MemberState.STABLE, parts(0, 2), parts())


def test_revoke_and_gain_in_one_move_revokes_first_then_waits_for_the_gain() -> None:
    current = Reconciliation(1, 0, MemberState.STABLE, parts(0, 1))
    nxt = reconcile(current, parts(1, 2), 2, None, free)
    assert nxt.state == MemberState.UNREVOKED_PARTITIONS and nxt.assigned == parts(1)
    done = reconcile(nxt, parts(1, 2), 2, parts(1), free)
    assert done == Reconciliation(2, 1, MemberState.STABLE, parts(1, 2), parts())
