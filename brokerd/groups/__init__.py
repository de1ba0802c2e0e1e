"""The group coordinator: consumer groups and their committed offsets.

The leader of ``__consumer_offsets`` partition ``partition_for(group_id)`` coordinates a group.
Layering inside the package, each module importing only those above it in this list:

- ``hashing``: which offsets partition owns a group (Java's String.hashCode, as Kafka).
- ``config``: the coordinator's settings and their Kafka defaults.
- ``records``: the byte formats of ``__consumer_offsets`` keys and values.
- ``group``: one classic group's data (members, generation, protocol selection).
- ``rebalance`` / ``membership``: the pure state machine (JoinGroup, SyncGroup, Heartbeat,
  LeaveGroup, timer expiry) over a :class:`~brokerd.groups.group.Group`.
- ``offsets``: the committed-offset cache, commit fencing, retention.
- ``shard``: everything one offsets partition holds; every API as a pure operation returning
  a :class:`~brokerd.groups.outcome.Result` (records to append, response), and ``replay``.
- ``responses``: version-specific response shapes.
- ``runtime``: the asyncio :class:`GroupCoordinator` the server holds.
- ``lag``: consumer-lag arithmetic for the control plane.
"""

from brokerd.groups.config import GroupConfig
from brokerd.groups.hashing import java_string_hash, partition_for
from brokerd.groups.lag import LagRow, group_lag, partition_lag
from brokerd.groups.runtime import GroupCoordinator, OffsetsLog

__all__ = [
    "GroupConfig",
    "GroupCoordinator",
    "LagRow",
    "OffsetsLog",
    "group_lag",
    "java_string_hash",
    "partition_for",
    "partition_lag",
]
