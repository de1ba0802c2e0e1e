"""Pure leadership decisions of the controller: failover, preferred leaders, elections an
admin asks for, reassignment.

Kept apart from ZooKeeper I/O so every rule is a millisecond unit test; the controller
(:mod:`brokerd.coordination.controller`) applies them to the states it read and writes the
results conditionally.  Each function returns the partition's next state, or None when the
current one needs no write.

``eligible`` is the set of brokers that may lead or stay in an ISR: registered in
``/brokers/ids`` and not in controlled shutdown.  ``alive`` (eligible plus brokers still
shutting down) only matters for a leader that is shutting down with nobody to hand over to:
it keeps leading until it exits, as in Kafka.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence

from brokerd.coordination.znodes import PartitionState

NO_LEADER = -1
# A reassignment's (replicas, adding, removing): the union, and what is added and removed.
Moved = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]


def elect_on_change(
    replicas: Sequence[int],
    state: PartitionState,
    eligible: set[int],
    alive: set[int],
    controller_epoch: int,
    unclean: bool = False,
) -> PartitionState | None:
    """The state after brokers died or started shutting down (or an offline partition's
    replica came back).

    * the leader stays eligible: drop ineligible followers from the ISR (no epoch bump:
      leadership did not change, followers fetch on);
    * otherwise the first replica in assignment order that is eligible and in the ISR
      leads (leader epoch + 1), ISR := ISR minus ineligible brokers;
    * nobody in the ISR is eligible: with ``unclean`` the first eligible replica leads
      alone (possible data loss, the topic opted in); without, the partition goes offline
      (leader -1) and the ISR keeps its last members, so that when one of them returns it
      is elected without losing acknowledged data.
    """
    isr = tuple(b for b in state.isr if b in eligible)
    if state.leader in eligible:
        if isr == state.isr:
            return None
        return dataclasses.replace(state, isr=isr, controller_epoch=controller_epoch)
    in_sync = [b for b in replicas if b in eligible and b in state.isr]
    if in_sync:
        return _lead(state, in_sync[0], isr, controller_epoch)
    candidates = [b for b in replicas if b in eligible]
    if unclean and candidates:
        return _lead(state, candidates[0], (candidates[0],), controller_epoch)
    if state.leader in alive or state.leader == NO_LEADER:
        return None  # a shutting-down leader with nobody to take over, or already offline
    return _lead(state, NO_LEADER, isr or state.isr, controller_epoch)


def preferred_leader_move(
    replicas: Sequence[int], state: PartitionState, eligible: set[int], controller_epoch: int
) -> PartitionState | None:
    """Move leadership back to the preferred replica (first in the assignment) when it is
    eligible and in the ISR; the ISR itself is unchanged."""
    if not replicas:
        return None
    preferred = replicas[0]
    if state.leader == preferred or preferred not in eligible or preferred not in state.isr:
        return None
    return _lead(state, preferred, state.isr, controller_epoch)


class Requested(enum.Enum):
    """What an ElectLeaders request (KIP-183, KIP-460) finds for one partition."""

    ELECTED = "elected"
    NOT_NEEDED = "not needed"  # the preferred replica leads already / the leader is alive
    NOT_AVAILABLE = "not available"  # no replica the election type allows may lead


def requested_election(
    unclean: bool, replicas: Sequence[int], state: PartitionState, eligible: set[int],
    alive: set[int], controller_epoch: int,
) -> tuple[Requested, PartitionState | None]:
    """An election an admin asked for, with the state to write when one happens.

    Kafka's two types: *preferred* moves leadership to the first assigned replica when it
    is eligible and in the ISR (not needed when it leads already); *unclean* acts only on a
    partition whose leader is gone, electing an eligible ISR member if there is one and
    otherwise the first eligible replica alone (possible data loss: the admin asked for
    it, whatever the topic's ``unclean.leader.election.enable``)."""
    if not unclean:
        if replicas and state.leader == replicas[0]:
            return Requested.NOT_NEEDED, None
        moved = preferred_leader_move(replicas, state, eligible, controller_epoch)
        return (Requested.ELECTED, moved) if moved else (Requested.NOT_AVAILABLE, None)
    if state.leader in alive:
        return Requested.NOT_NEEDED, None
    elected = elect_on_change(replicas, state, eligible, alive, controller_epoch, unclean=True)
    if elected is None or elected.leader == NO_LEADER:
        return Requested.NOT_AVAILABLE, None
    return Requested.ELECTED, elected


def reassignment_replicas(original: Sequence[int], target: Sequence[int]) -> Moved:
    """Kafka's first reassignment step: (replicas, adding, removing) with
    replicas = target + (original - target), so the new replicas start following while the
    old ones keep serving until the target is in sync."""
    replicas = tuple(target) + tuple(b for b in original if b not in target)
    adding = tuple(b for b in target if b not in original)
    removing = tuple(b for b in original if b not in target)
    return replicas, adding, removing


def reassignment_target(replicas: Sequence[int], removing: Sequence[int]) -> tuple[int, ...]:
    """The target a reassignment in progress converges to (its znode stores only the
    union and the replicas being removed)."""
    return tuple(b for b in replicas if b not in removing)


def reassignment_ready(target: Sequence[int], state: PartitionState) -> bool:
    """Every target replica is in sync: the old replicas may be dropped."""
    return all(b in state.isr for b in target)


def state_after_reassignment(
    target: Sequence[int], state: PartitionState, eligible: set[int], controller_epoch: int
) -> PartitionState | None:
    """Last step: ISR := ISR ∩ target, and leadership moves into the target (epoch + 1) when
    the current leader is being removed or cannot lead.  Call only when
    :func:`reassignment_ready`."""
    isr = tuple(b for b in state.isr if b in target)
    if state.leader in target and state.leader in eligible:
        if isr == state.isr:
            return None
        return dataclasses.replace(state, isr=isr, controller_epoch=controller_epoch)
    leaders = [b for b in target if b in eligible and b in isr]
    if not leaders:
        return None  # nobody in the target can lead right now; retried on the next change
    return _lead(state, leaders[0], isr, controller_epoch)


def _lead(state: PartitionState, leader: int, isr: tuple[int, ...],
          controller_epoch: int) -> PartitionState:
    return PartitionState(leader, state.leader_epoch + 1, isr, controller_epoch,
                          state.zk_version)


class Altered(enum.Enum):
    """What an AlterPartitionReassignments request did to one partition (KIP-455)."""

    STARTED = enum.auto()  # a new target is written (or a cancellation is)
    NO_SUCH_PARTITION = enum.auto()
    NOTHING_TO_CANCEL = enum.auto()
    INVALID_REPLICAS = enum.auto()  # empty, repeated, or not live brokers
    REPLICATION_FACTOR_CHANGED = enum.auto()  # refused when the request forbids it (v1)
    NO_LEADER_WITHIN = enum.auto()  # the leader is dropped and no replica kept can take over


def altered_reassignment(
    replicas: Sequence[int], adding: Sequence[int], removing: Sequence[int],
    target: Sequence[int] | None,
) -> Moved | None:
    """(replicas, adding, removing) after a new ``target`` or, for None, a cancellation.

    The original replicas are the assignment without those being added.  A new target
    replaces any reassignment in progress (its new replicas outside the new target are
    dropped, Kafka's rule); a cancellation goes back to the original replicas.  None:
    a cancellation with nothing in progress."""
    original = tuple(b for b in replicas if b not in adding)
    if target is None:
        return (original, (), ()) if adding or removing else None
    return reassignment_replicas(original, target)


def invalid_target(target: Sequence[int], live: set[int]) -> str | None:
    """Why a requested replica list is refused (INVALID_REPLICA_ASSIGNMENT), or None."""
    if not target:
        return "empty replica list"
    if len(set(target)) != len(target):
        return f"duplicate broker ids in {list(target)}"
    missing = sorted(set(target) - live)
    return f"brokers {missing} are not registered" if missing else None


def state_within(
    replicas: Sequence[int], state: PartitionState, eligible: set[int], controller_epoch: int
) -> tuple[bool, PartitionState | None]:
    """Keep a partition's state within a reduced assignment (replicas dropped by a
    replaced or cancelled reassignment): ISR := ISR ∩ replicas, and leadership moves to
    the first eligible in-sync replica kept when the leader is dropped.  (possible, next
    state); not possible when the leader is dropped and no replica kept can lead."""
    isr = tuple(b for b in state.isr if b in replicas)
    if state.leader in replicas or state.leader == NO_LEADER:
        return True, (None if isr == state.isr
                      else dataclasses.replace(state, isr=isr, controller_epoch=controller_epoch))
    leaders = [b for b in replicas if b in eligible and b in isr]
    if not leaders:
        return False, None
    return True, _lead(state, leaders[0], isr, controller_epoch)
