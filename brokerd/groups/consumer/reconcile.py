"""Incremental reconciliation: how one member moves from its assignment to its target.

Kafka's ``CurrentAssignmentBuilder`` as a pure function.  Nobody stops for a rebalance:

1. A member whose target no longer holds some of its partitions first gets an assignment
   without them (state UNREVOKED_PARTITIONS, member epoch unchanged); it keeps consuming the
   rest.
2. Once its heartbeat shows it released them (its owned partitions no longer include any
   pending one), it moves to the target's epoch.
3. A partition of its target still held by another member (assigned, or pending its
   revocation) is not given yet: the member waits in UNRELEASED_PARTITIONS, at the new
   epoch, and gets it on a heartbeat after the previous owner released it.

So a partition never has two owners at once, and each member's change is a small delta.
"""

from __future__ import annotations

from collections.abc import Callable

from brokerd.groups.consumer.group import MemberState, Partitions, Reconciliation
from brokerd.groups.consumer.records import TopicIdPartition

#: True when a partition is held by no other member.
IsFree = Callable[[TopicIdPartition], bool]


def reconcile(current: Reconciliation, target: Partitions, target_epoch: int,
              owned: Partitions | None, is_free: IsFree) -> Reconciliation:
    """The member's next current assignment.

    ``owned``: the partitions the member reported in this heartbeat (None when it did not
    report them, i.e. they did not change since its previous heartbeat).
    """
    if current.state == MemberState.UNREVOKED_PARTITIONS:
        if owned is None or owned & current.pending_revocation:
            return current  # still revoking
        return _next_epoch(current, target, target_epoch, is_free)
    if current.member_epoch != target_epoch:
        return _next_epoch(current, target, target_epoch, is_free)
    if current.state == MemberState.UNRELEASED_PARTITIONS:
        return _take_released(current, target, is_free)
    return current


def _next_epoch(current: Reconciliation, target: Partitions, target_epoch: int,
                is_free: IsFree) -> Reconciliation:
    keep = current.assigned & target
    revoke = current.assigned - target
    if revoke:
        return Reconciliation(current.member_epoch, current.previous_member_epoch,
                              MemberState.UNREVOKED_PARTITIONS, keep, revoke)
    moved = Reconciliation(target_epoch, current.member_epoch, MemberState.STABLE, keep,
                           frozenset())
    return _take_released(moved, target, is_free)


def _take_released(current: Reconciliation, target: Partitions,
                   is_free: IsFree) -> Reconciliation:
    wanted = target - current.assigned
    free = frozenset(p for p in wanted if is_free(p))
    state = MemberState.UNRELEASED_PARTITIONS if wanted - free else MemberState.STABLE
    return Reconciliation(current.member_epoch, current.previous_member_epoch, state,
                          current.assigned | free, frozenset())
