"""The group coordinator's settings, named after Kafka's broker configs.

Defaults are Kafka's, each with its reason; tests shrink the timers to milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokerd.groups.hashing import DEFAULT_OFFSETS_PARTITIONS

_DAY_MS = 24 * 60 * 60 * 1000


@dataclass(frozen=True)
class GroupConfig:
    """Immutable coordinator settings.

    - ``num_partitions`` (``offsets.topic.num.partitions``, 50): fixed for the cluster's life,
      since changing it would move every group to another coordinator.
    - ``min/max_session_timeout_ms`` (``group.min/max.session.timeout.ms``, 6 s / 30 min):
      bounds that stop a client from being expired too eagerly or kept alive forever.
    - ``initial_rebalance_delay_ms`` (``group.initial.rebalance.delay.ms``, 3 s): a new group
      waits this long (re-armed while members keep arriving, capped by the rebalance timeout)
      so a fleet starting together forms one generation instead of N.
    - ``offsets_retention_ms`` (``offsets.retention.minutes``, 7 days): how long offsets of
      an empty group (or a standalone committer) outlive the last activity.
    - ``offsets_retention_check_interval_ms`` (``offsets.retention.check.interval.ms``,
      10 min): how often expired offsets are looked for.
    - ``offset_metadata_max_bytes`` (``offset.metadata.max.bytes``, 4096): per-commit metadata
      string limit, so commits cannot bloat the compacted topic.
    - ``consumer_session_timeout_ms`` (``group.consumer.session.timeout.ms``, 45 s) and
      ``consumer_heartbeat_interval_ms`` (``group.consumer.heartbeat.interval.ms``): for
      consumer-protocol groups (KIP-848) the broker sets both; members heartbeat at the
      interval the coordinator answers with and are expired after the session timeout.
      The interval defaults to 250 ms, not Kafka's 5 s: members learn of a rebalance only
      from a heartbeat answer, so the interval bounds how soon a new member gets partitions
      (bench/rebalance.py on a loaded 2-core machine, p50 of the fourth member's first
      partitions: 0.16 s at 250 ms, 0.38 s at 500 ms, 2.6 s at 5 s).  The price is 4
      heartbeats/s per consumer; a steady one costs ~70 us of coordinator and codec time
      (answered without copying or writing anything), so ~0.3 core per 1,000 consumers.
    """

    num_partitions: int = DEFAULT_OFFSETS_PARTITIONS
    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3_000
    offsets_retention_ms: int = 7 * _DAY_MS
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    consumer_session_timeout_ms: int = 45_000
    consumer_heartbeat_interval_ms: int = 250
