"""Offset reset planning (pure): where each partition's committed offset would move.

Strategies, as Kafka's ``kafka-consumer-groups --reset-offsets``: ``earliest`` (the log start),
``latest`` (the high watermark), ``offset`` (a given offset, clamped into
[log start, high watermark] since a consumer cannot resume outside the retained log), and
``timestamp`` (the first offset whose timestamp is at or after it, looked up by the caller).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .lag import partition_lag

STRATEGIES = ("earliest", "latest", "offset", "timestamp")
TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True)
class ResetRequest:
    strategy: str
    topic: str
    partition: int | None = None  # None: every partition of the topic
    offset: int | None = None  # for "offset"
    timestamp_ms: int | None = None  # for "timestamp"


@dataclass(frozen=True)
class PlannedReset:
    """One partition's move, with the lag it would have right after the reset."""

    topic: str
    partition: int
    current: int | None  # None: the group has no commit there yet
    target: int
    lag_after: int


def plan_reset(request: ResetRequest, partitions: Sequence[TopicPartitionKey],
               current: Mapping[TopicPartitionKey, int],
               bounds: Mapping[TopicPartitionKey, tuple[int, int]],
               by_timestamp: Mapping[TopicPartitionKey, int] | None = None) -> list[PlannedReset]:
    """The target of every partition in ``partitions`` that has known bounds."""
    if request.strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {request.strategy!r}")
    planned = []
    for tp in sorted(partitions):
        if tp not in bounds:
            continue
        log_start, high_watermark = bounds[tp]
        if request.strategy == "earliest":
            target = log_start
        elif request.strategy == "latest":
            target = high_watermark
        elif request.strategy == "offset":
            if request.offset is None:
                raise ValueError("an offset is needed")
            target = request.offset
        else:
            if by_timestamp is None or tp not in by_timestamp:
                raise ValueError("the offsets for the timestamp are needed")
            target = by_timestamp[tp]
        target = min(max(target, log_start), high_watermark)
        planned.append(PlannedReset(tp[0], tp[1], current.get(tp), target,
                                    partition_lag(target, log_start, high_watermark)))
    return planned
