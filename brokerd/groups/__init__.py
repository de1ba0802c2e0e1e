"""The group coordinator: consumer groups and their committed offsets.

The leader of ``__consumer_offsets`` partition ``partition_for(group_id)`` coordinates a group.
Modules, each importing only those listed before it (plus ``brokerd.protocol``):

- ``hashing``: which offsets partition owns a group (Java's String.hashCode, as Kafka).
- ``config``: the coordinator's settings and their Kafka defaults.
- ``records``: the byte formats of ``__consumer_offsets`` keys and values.
- ``lag``: consumer-lag arithmetic for the control plane.
- ``group``: one classic group's data (members, generation, protocol selection).
- ``outcome``: what an operation yields (records to append, answers to send).
- ``rebalance`` / ``membership``: the pure state machine (JoinGroup, SyncGroup, Heartbeat,
  LeaveGroup, timer expiry) over a group.
- ``offsets``: the committed-offset cache, commit fencing, retention rules.
- ``assignors``: the broker-side assignors of KIP-848 (uniform, range, roundrobin), pure.
- ``consumer``: KIP-848 consumer-protocol groups (records, reconciliation, heartbeat),
  pure; the shard holds them beside the classic groups.
- ``shard``: everything one offsets partition holds; every API as a pure operation, and
  ``replay``, the single path by which persisted state is rebuilt.
- ``responses``: version-specific response shapes and whole-request errors.
- ``runtime``: the asyncio :class:`GroupCoordinator` the server holds.
- ``partition_log``: the runtime's log over hosted ``__consumer_offsets`` replicas
  (imports ``brokerd.replication``).
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
