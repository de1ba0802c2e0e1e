"""Consumer lag and its health: pure functions over offsets observed by the snapshot task.

Per partition, at each snapshot:

    lag = high_watermark - max(committed, log_start)

(a committed offset below the log start points at deleted records; the consumer will resume at
the log start, so those records are not "behind", they are gone).

A partition the group has never committed on, of a topic it consumes (it committed on another
partition of the topic, or a member is assigned one), counts from its log start, as Kafka's
``kafka-consumer-groups`` tools show it: ``committed`` is None, the partition is marked
``uncommitted``, and its lag is every retained record.  Its health cannot be judged without
commits (OK), and the consumption rate takes its position to be the log start.

Health follows Burrow's evaluation rules (LinkedIn's consumer-lag checker), applied to a window
of the partition's last ``WINDOW`` commits, each a (timestamp, committed offset, lag) triple,
checked in this order, first match wins:

1. the current lag is zero, or the lag was zero at any commit in the window → OK;
2. a committed offset is lower than the one before it → REWIND;
3. now − last commit time > last commit time − first commit time (the consumer has been silent
   for longer than the window spans) → STOP;
4. every commit in the window has the same offset (committing, but not moving) → STALL;
5. the lag never decreased from one commit to the next (moving, but falling behind) → WARN;
6. otherwise → OK.

One deliberate difference from Burrow: rules 4 and 5 compare commits, so they need at least two;
a window holding a single commit (a group just seen for the first time) is OK rather than
STALL, so that a new group does not flash an error on its first snapshot.

A group's status is its worst partition's, with STOP, STALL and REWIND reported as ERR.

What counts as a commit: OffsetFetch returns the committed offset but not when it was
committed, so commits are inferred from snapshots.  A snapshot is a commit observation when the
offset moved since the previous snapshot, or when the group has members (a live consumer
commits periodically, e.g. every 5 s with auto-commit, even when its position did not move; a
stalled consumer therefore still shows up as a run of equal offsets, while a consumer that has
gone away leaves no new observations and ages into STOP).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from itertools import pairwise

WINDOW = 10  # commits per partition that Burrow's rules look at
RATE_HORIZON_S = 60.0  # consumption rate is measured over this much recent history


class Status(IntEnum):
    """Burrow's statuses, in increasing severity (the group takes the worst)."""

    OK = 1
    WARN = 2
    ERR = 3
    STOP = 4
    STALL = 5
    REWIND = 6


@dataclass(frozen=True)
class Commit:
    """One observed commit: when (epoch seconds), which offset, and the lag at that moment."""

    timestamp: float
    offset: int
    lag: int


@dataclass(frozen=True)
class PartitionOffsets:
    """What one snapshot saw for one partition of a topic a group consumes; ``committed`` is
    None where the group has no commit (yet)."""

    topic: str
    partition: int
    committed: int | None
    log_start: int
    high_watermark: int
    last_stable: int | None = None  # ListOffsets read_committed (LSO); None: not read


@dataclass(frozen=True)
class PartitionLag:
    """A partition's lag and status after a snapshot, with the commit window behind the status."""

    topic: str
    partition: int
    committed: int | None  # None: no commit, lag counted from the log start
    log_start: int
    high_watermark: int
    lag: int
    status: Status
    window: tuple[Commit, ...] = ()
    last_stable: int | None = None  # the last stable offset: below it, no open transaction

    @property
    def uncommitted(self) -> bool:
        return self.committed is None

    @property
    def read_committed_lag(self) -> int | None:
        """Records a read_committed consumer can read now (up to the last stable offset; an
        open transaction's records and what follows them wait); None when the LSO is unknown."""
        if self.last_stable is None:
            return None
        return partition_lag(self.committed, self.log_start, self.last_stable)

    @property
    def position(self) -> int:
        """Where the group would resume: its commit, or the log start without one."""
        return self.log_start if self.committed is None else self.committed


@dataclass(frozen=True)
class GroupLag:
    """A group's evaluated lag: its partitions, totals, status, and time-lag estimate.

    ``progress`` is the recent history of (timestamp, sum of committed offsets), from which the
    consumption rate (records/s) is measured; ``time_lag_s`` is None when the group has lag but
    is not consuming (no members, or no progress over the rate horizon).
    """

    partitions: tuple[PartitionLag, ...]
    status: Status
    total_lag: int
    max_lag: int
    rate: float | None
    time_lag_s: float | None
    progress: tuple[tuple[float, int], ...] = field(default=())


def partition_lag(committed: int | None, log_start: int, high_watermark: int) -> int:
    """Records the group has yet to read; never negative (a commit ahead of the high watermark,
    possible briefly after a truncation, means nothing to read).  Without a commit: every
    retained record."""
    return max(0, high_watermark - max(log_start if committed is None else committed, log_start))


def is_lag_ever_zero(window: Sequence[Commit]) -> bool:
    return any(commit.lag == 0 for commit in window)


def is_rewinding(window: Sequence[Commit]) -> bool:
    return any(later.offset < earlier.offset for earlier, later in pairwise(window))


def is_stopped(window: Sequence[Commit], now: float) -> bool:
    first, last = window[0].timestamp, window[-1].timestamp
    return now - last > last - first


def is_stalled(window: Sequence[Commit]) -> bool:
    return all(commit.offset == window[0].offset for commit in window)


def is_lag_not_decreasing(window: Sequence[Commit]) -> bool:
    return all(later.lag >= earlier.lag for earlier, later in pairwise(window))


def partition_status(window: Sequence[Commit], current_lag: int, now: float) -> Status:
    """Burrow's rules (module docstring) for one partition; an empty window cannot be judged."""
    if not window or current_lag == 0 or is_lag_ever_zero(window):
        return Status.OK
    if is_rewinding(window):
        return Status.REWIND
    if is_stopped(window, now):
        return Status.STOP
    if len(window) < 2:
        return Status.OK
    if is_stalled(window):
        return Status.STALL
    if is_lag_not_decreasing(window):
        return Status.WARN
    return Status.OK


def group_status(statuses: Iterable[Status]) -> Status:
    """The worst partition status, with the partition-level errors rolled up to ERR."""
    worst = max(statuses, default=Status.OK)
    return Status.ERR if worst > Status.ERR else worst


def next_window(window: Sequence[Commit], observed: Commit,
                group_active: bool) -> tuple[Commit, ...]:
    """The window after one snapshot: the observation is a commit when the offset moved, or the
    group has members (module docstring); only the last ``WINDOW`` commits are kept."""
    moved = not window or window[-1].offset != observed.offset
    if moved or group_active:
        return (*window, observed)[-WINDOW:]
    return tuple(window)


def consumption_rate(progress: Sequence[tuple[float, int]]) -> float | None:
    """Records consumed per second over the history: Δ(sum of committed) / Δt.

    None when there is not yet a time span to measure over.  A rewind (negative Δ) is no
    consumption, so the rate is clamped at zero.
    """
    if len(progress) < 2 or progress[-1][0] <= progress[0][0]:
        return None
    (t0, committed0), (t1, committed1) = progress[0], progress[-1]
    return max(0.0, (committed1 - committed0) / (t1 - t0))


def time_lag_seconds(total_lag: int, rate: float | None) -> float | None:
    """Seconds until the group catches up at its recent rate: lag / rate.

    Zero lag is zero seconds behind whatever the rate; with lag and no measurable (or zero)
    consumption the estimate is None ("not catching up").
    """
    if total_lag == 0:
        return 0.0
    if not rate:
        return None
    return total_lag / rate


def evaluate_group(previous: GroupLag | None, observed: Sequence[PartitionOffsets],
                   group_active: bool, now: float) -> GroupLag:
    """Fold one snapshot of a group into its lag state (pure: ``now`` is passed in)."""
    old = {(p.topic, p.partition): p for p in previous.partitions} if previous else {}
    partitions = []
    for offsets in sorted(observed, key=lambda o: (o.topic, o.partition)):
        lag = partition_lag(offsets.committed, offsets.log_start, offsets.high_watermark)
        prior = old.get((offsets.topic, offsets.partition))
        window = (() if offsets.committed is None else  # no commit: nothing to judge
                  next_window(prior.window if prior else (), Commit(now, offsets.committed, lag),
                              group_active))
        partitions.append(PartitionLag(
            topic=offsets.topic, partition=offsets.partition, committed=offsets.committed,
            log_start=offsets.log_start, high_watermark=offsets.high_watermark, lag=lag,
            status=partition_status(window, lag, now), window=window,
            last_stable=offsets.last_stable))
    total_lag = sum(p.lag for p in partitions)
    history = previous.progress if previous else ()
    progress = tuple(point for point in history if now - point[0] <= RATE_HORIZON_S)
    progress = (*progress, (now, sum(p.position for p in partitions)))
    rate = consumption_rate(progress)
    return GroupLag(
        partitions=tuple(partitions), status=group_status(p.status for p in partitions),
        total_lag=total_lag, max_lag=max((p.lag for p in partitions), default=0), rate=rate,
        # a group without members consumes nothing, whatever it consumed a minute ago
        time_lag_s=time_lag_seconds(total_lag, rate if group_active else 0.0), progress=progress)


def preview_lag(partitions: Sequence[PartitionLag], targets: dict[tuple[str, int], int]
                ) -> list[PartitionLag]:
    """The partitions as they would be with the committed offsets moved to ``targets``."""
    moved = []
    for p in partitions:
        target = targets.get((p.topic, p.partition))
        moved.append(p if target is None else replace(
            p, committed=target, lag=partition_lag(target, p.log_start, p.high_watermark)))
    return moved


def group_lag_to_json(group: GroupLag) -> dict:
    """The stored form (a JSON column): ``{"partitions": [{…, "window": [[t, offset, lag], …]}],
    "progress": [[t, committed_sum], …], …}``; statuses by name."""
    return {
        "status": group.status.name, "total_lag": group.total_lag, "max_lag": group.max_lag,
        "rate": group.rate, "time_lag_s": group.time_lag_s,
        "progress": [list(point) for point in group.progress],
        "partitions": [{
            "topic": p.topic, "partition": p.partition, "committed": p.committed,
            "log_start": p.log_start, "high_watermark": p.high_watermark, "lag": p.lag,
            "status": p.status.name, "uncommitted": p.uncommitted,
            "last_stable": p.last_stable, "read_committed_lag": p.read_committed_lag,
            "window": [[c.timestamp, c.offset, c.lag] for c in p.window],
        } for p in group.partitions],
    }


def group_lag_from_json(data: dict) -> GroupLag:
    return GroupLag(
        partitions=tuple(PartitionLag(
            topic=p["topic"], partition=p["partition"], committed=p["committed"],
            log_start=p["log_start"], high_watermark=p["high_watermark"], lag=p["lag"],
            status=Status[p["status"]], window=tuple(Commit(*c) for c in p["window"]),
            last_stable=p.get("last_stable"))  # rows stored before it: unknown
            for p in data["partitions"]),
        status=Status[data["status"]], total_lag=data["total_lag"], max_lag=data["max_lag"],
        rate=data["rate"], time_lag_s=data["time_lag_s"],
        progress=tuple((t, committed) for t, committed in data["progress"]))
