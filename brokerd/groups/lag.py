"""Consumer lag: how far a group's committed position trails each partition's end.

Inputs come from two places the control plane reads separately (the group's committed
offsets, each partition's log start and high watermark); this module only does the
arithmetic, so lag views and lag snapshots agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

TopicPartition = tuple[str, int]


def partition_lag(committed: int | None, log_start: int, high_watermark: int) -> int:
    """Messages the group has yet to consume in one partition.

    A consumer resumes from its committed offset; with no commit, or a commit below the log
    start (retention deleted what it pointed at), the earliest offset it can read is the log
    start.  So ``position = max(committed or log_start, log_start)`` and
    ``lag = high_watermark - position``, floored at 0 because a commit may briefly run ahead
    of a high watermark observed a moment earlier.
    """
    position = log_start if committed is None else max(committed, log_start)
    return max(high_watermark - position, 0)


@dataclass(frozen=True, slots=True)
class LagRow:
    """One partition of a group's lag report (``committed`` is None when never committed)."""

    topic: str
    partition: int
    committed: int | None
    log_start: int
    high_watermark: int
    lag: int


def group_lag(
    committed: Mapping[TopicPartition, int],
    log_bounds: Mapping[TopicPartition, tuple[int, int]],
) -> list[LagRow]:
    """Per-partition rows, sorted by topic then partition.

    ``committed`` maps partitions to the group's committed offsets; ``log_bounds`` maps every
    partition the report covers to ``(log_start, high_watermark)``.  Partitions committed but
    absent from ``log_bounds`` (e.g. a deleted topic) are left out: there is no end to lag
    behind.
    """
    rows = []
    for (topic, partition), (log_start, high_watermark) in sorted(log_bounds.items()):
        offset = committed.get((topic, partition))
        rows.append(LagRow(topic, partition, offset, log_start, high_watermark,
                           partition_lag(offset, log_start, high_watermark)))
    return rows
