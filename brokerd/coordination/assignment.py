"""Pure placement decisions: replica assignment of new partitions, initial leadership.

Kept apart from the ZooKeeper I/O so each rule is a millisecond unit test.
"""

from __future__ import annotations

from collections.abc import Sequence

from brokerd.coordination.znodes import PartitionState


class AssignmentError(ValueError):
    """The request cannot be placed on the live brokers (e.g. RF above the broker count)."""


def assign_replicas(
    brokers: Sequence[int], partitions: Sequence[int], replication_factor: int, start: int = 0
) -> dict[int, tuple[int, ...]]:
    """Round-robin placement like Kafka's rack-unaware assignor (without its random shift).

    Partition ``p`` (the i-th new one) gets its preferred leader at ``brokers[(start + i) % n]``
    and its followers on the next brokers, wrapping around: with n brokers each broker leads
    about ``len(partitions) / n`` partitions and no broker holds two replicas of one partition.
    """
    live = sorted(set(brokers))
    if replication_factor < 1 or replication_factor > len(live):
        raise AssignmentError(
            f"replication factor {replication_factor} needs that many live brokers, "
            f"have {len(live)}")
    n = len(live)
    return {
        partition: tuple(live[(start + i + r) % n] for r in range(replication_factor))
        for i, partition in enumerate(partitions)
    }


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
