"""CPU-share and latency arithmetic shared by the benchmark's processes.

A process's *CPU share* over a window is ``(user + system CPU seconds) / wall seconds``:
1.0 means it kept one core busy the whole time, so on this 2-core machine a share near
1.0 for the single-threaded broker means the broker is the bottleneck, and a share near
1.0 for a client means the load generator is.

Every reading is taken inside the client process that drives the load, at the edges of
its own measured window, so the broker's CPU and the client's CPU cover the same
interval (no process start-up, no connection set-up).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# /proc/<pid>/stat fields 14 and 15 (1-based) are utime and stime in clock ticks.  The
# second field is the command name in parentheses and may itself contain spaces or
# parentheses, so fields are counted from the last ')' instead of split from the start:
# after it, field 3 (state) has index 0, hence utime is index 14 - 3 = 11.
_UTIME_AFTER_COMM = 11
CLOCK_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def cpu_ticks_from_stat(stat_line: str) -> int:
    """utime + stime (clock ticks) from the text of a ``/proc/<pid>/stat`` file."""
    fields = stat_line[stat_line.rindex(")") + 1:].split()
    return int(fields[_UTIME_AFTER_COMM]) + int(fields[_UTIME_AFTER_COMM + 1])


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) another process has used so far, from /proc."""
    stat_line = Path(f"/proc/{pid}/stat").read_text()
    return cpu_ticks_from_stat(stat_line) / CLOCK_TICKS_PER_SECOND


def rss_bytes_from_status(status: str) -> int:
    """Resident set size in bytes from the text of a ``/proc/<pid>/status`` file (its
    ``VmRSS:`` line is in kB); it is what the process holds in RAM, the cost of keeping
    idle partitions or connections that the density benchmark reports."""
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise ValueError("no VmRSS line (a zombie or kernel thread has none)")


def process_rss_bytes(pid: int) -> int:
    """Resident set size of another process, from /proc."""
    return rss_bytes_from_status(Path(f"/proc/{pid}/status").read_text())


def machine_busy_ticks_from_stat(proc_stat: str) -> int:
    """Non-idle clock ticks of all CPUs together, from the text of ``/proc/stat``.

    Its first line is ``cpu user nice system idle iowait irq softirq steal guest
    guest_nice``; busy = user + nice + system + irq + softirq + steal (guest time is
    already counted inside user and nice, idle and iowait are not busy).
    """
    fields = [int(v) for v in proc_stat.split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return user + nice + system + irq + softirq + steal


def machine_busy_seconds() -> float:
    """CPU seconds every process on this machine has used so far (all cores summed)."""
    return machine_busy_ticks_from_stat(Path("/proc/stat").read_text()) / CLOCK_TICKS_PER_SECOND


def own_cpu_seconds() -> float:
    """CPU seconds (user + system) this process has used so far; ``os.times`` counts
    every thread, so librdkafka's background threads are included."""
    times = os.times()
    return times.user + times.system


@dataclass(frozen=True)
class CpuSample:
    """One instant: wall clock plus the CPU used so far by this process, the broker and
    the whole machine."""

    wall: float
    own_cpu: float
    broker_cpu: float
    machine_cpu: float

    @classmethod
    def take(cls, broker_pid: int) -> CpuSample:
        return cls(time.perf_counter(), own_cpu_seconds(), process_cpu_seconds(broker_pid),
                   machine_busy_seconds())


@dataclass(frozen=True)
class Window:
    """What happened between two samples: the denominator of every rate and share.

    ``other_cpu_share`` is what every other process on the machine used meanwhile
    (machine - client - broker, in cores): on a shared machine it says how much the
    figures were disturbed.
    """

    seconds: float
    client_cpu_share: float
    broker_cpu_share: float
    other_cpu_share: float

    @classmethod
    def between(cls, start: CpuSample, end: CpuSample) -> Window:
        seconds = end.wall - start.wall
        if seconds <= 0:
            raise ValueError("a measurement window must have a positive length")
        client = (end.own_cpu - start.own_cpu) / seconds
        broker = (end.broker_cpu - start.broker_cpu) / seconds
        machine = (end.machine_cpu - start.machine_cpu) / seconds
        # /proc/stat and the per-process counters tick separately: never report < 0.
        return cls(seconds, client, broker, max(machine - client - broker, 0.0))

    def as_dict(self) -> dict[str, float]:
        return {
            "seconds": round(self.seconds, 3),
            "client_cpu_share": round(self.client_cpu_share, 3),
            "broker_cpu_share": round(self.broker_cpu_share, 3),
            "other_cpu_share": round(self.other_cpu_share, 3),
        }


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values.

    The nearest-rank p-th percentile is the smallest value with at least ``p`` of the
    values at or below it: rank ``ceil(p * n)`` counted from 1, i.e. index
    ``ceil(p * n) - 1``; ``max(..., 0)`` maps p = 0 to the minimum.
    """
    if not sorted_values:
        raise ValueError("percentile of no values")
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction {fraction} outside [0, 1]")
    rank = max(math.ceil(fraction * len(sorted_values)) - 1, 0)
    return sorted_values[rank]


def megabytes_per_second(nbytes: int, seconds: float) -> float:
    """Decimal megabytes (10**6 bytes) per second, the unit the targets are stated in."""
    return nbytes / seconds / 1e6


def idle_cpu_cores(pids: Sequence[int], seconds: float) -> dict[str, Any]:
    """Sleep ``seconds`` and return the cores each of ``pids`` used meanwhile (``cores``:
    pid -> CPU seconds / wall seconds) and what every other process used (``other_cores``),
    read from /proc at both edges: the cost of holding partitions or connections that
    carry no traffic, and how disturbed that reading was."""
    start_wall, start_machine = time.perf_counter(), machine_busy_seconds()
    start = {pid: process_cpu_seconds(pid) for pid in pids}
    time.sleep(seconds)
    end = {pid: process_cpu_seconds(pid) for pid in pids}
    wall = time.perf_counter() - start_wall
    cores = {pid: (end[pid] - start[pid]) / wall for pid in pids}
    machine = (machine_busy_seconds() - start_machine) / wall
    return {"seconds": round(wall, 2), "cores": cores,
            "other_cores": max(machine - sum(cores.values()), 0.0)}
