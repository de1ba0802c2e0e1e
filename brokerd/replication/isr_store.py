"""Where a leader proposes ISR changes: the interface replication depends on.

The implementation is the ZooKeeper coordinator (a conditional write of the partition's
state znode, returning its ``PartitionState``); replication sits below coordination, so it
names only these Protocols and its tests use a fake.
"""

from __future__ import annotations

from typing import Protocol


class IsrState(Protocol):
    """The stored partition state after a write (``PartitionState`` satisfies it)."""

    @property
    def leader_epoch(self) -> int: ...

    @property
    def isr(self) -> tuple[int, ...]: ...

    @property
    def zk_version(self) -> int: ...


class IsrStore(Protocol):
    """Conditional ISR writes by the partition's leader."""

    async def update_isr(self, topic: str, partition: int, leader_epoch: int,
                         isr: tuple[int, ...], zk_version: int) -> IsrState | None:
        """Write ``isr`` if the state is still at ``zk_version``; the new state, or None
        when someone (the controller) changed it meanwhile.  Raises on store trouble."""
        ...
