"""Pure placement decisions: replica assignment of new partitions, initial leadership.

Kept apart from the ZooKeeper I/O so each rule is a millisecond unit test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from brokerd.coordination.znodes import PartitionState


class AssignmentError(ValueError):
    """The request cannot be placed on the live brokers (e.g. RF above the broker count)."""


def assign_replicas(
    brokers: Sequence[int],
    partitions: Sequence[int],
    replication_factor: int,
    start: int = 0,
    racks: Mapping[int, str | None] | None = None,
) -> dict[int, tuple[int, ...]]:
    """Round-robin placement like Kafka's assignor (without its random shift).

    Partition ``p`` (the i-th new one) gets its preferred leader at position ``start + i`` of
    the broker list and its followers on the next brokers, wrapping around: with n brokers
    each broker leads about ``len(partitions) / n`` partitions and no broker holds two
    replicas of one partition.  When brokers have racks the list alternates racks (Kafka's
    rack-aware order) and followers skip brokers whose rack the partition already uses
    until every rack holds a replica, so losing one rack loses at most
    ``ceil(RF / racks)`` replicas of any partition.
    """
    live = sorted(set(brokers))
    if replication_factor < 1 or replication_factor > len(live):
        raise AssignmentError(
            f"replication factor {replication_factor} needs that many live brokers, "
            f"have {len(live)}")
    rack_of = {b: (racks or {}).get(b) for b in live}
    if any(rack is not None for rack in rack_of.values()):
        if any(rack is None for rack in rack_of.values()):
            raise AssignmentError("some brokers have a rack and others do not")
        live = rack_alternated(live, rack_of)
    n = len(live)
    return {
        partition: _spread(live, (start + i) % n, replication_factor, rack_of)
        for i, partition in enumerate(partitions)
    }


def rack_alternated(brokers: Sequence[int], rack_of: Mapping[int, str | None]) -> list[int]:
    """Brokers ordered rack by rack in turn: racks a,a,b,c -> a1, b1, c1, a2 (Kafka's
    ``getRackAlternatedBrokerList``), so neighbours in the list sit in different racks."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(brokers):
        by_rack.setdefault(str(rack_of[broker]), []).append(broker)
    columns = [by_rack[rack] for rack in sorted(by_rack)]
    depth = max(len(column) for column in columns)
    return [column[row] for row in range(depth) for column in columns if row < len(column)]


def _spread(ordered: Sequence[int], first: int, count: int,
            rack_of: Mapping[int, str | None]) -> tuple[int, ...]:
    """``count`` brokers walking ``ordered`` from ``first``: a broker whose rack is already
    used is passed over while some rack is still unused."""
    n = len(ordered)
    walk = [ordered[(first + k) % n] for k in range(n)]
    all_racks = {rack_of[b] for b in walk}
    chosen: list[int] = []
    while len(chosen) < count:
        used = {rack_of[b] for b in chosen}
        fresh = used != all_racks
        chosen.append(next(b for b in walk
                           if b not in chosen and (not fresh or rack_of[b] not in used)))
    return tuple(chosen)


def initial_state(
    replicas: Sequence[int], live_brokers: set[int], controller_epoch: int
) -> PartitionState | None:
    """Leadership for a partition that has none yet: the first live replica leads.

    The ISR starts as the live replicas: a new partition is empty, so every live replica
    is trivially caught up.  None when no replica is alive (the partition stays offline
    until one registers).
    """
    alive = tuple(b for b in replicas if b in live_brokers)
    if not alive:
        return None
    return PartitionState(leader=alive[0], leader_epoch=0, isr=alive,
                          controller_epoch=controller_epoch)
