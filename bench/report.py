"""The benchmark's output: a plain-text table for people and JSON for tools.

``results`` is the dict :mod:`bench.run_all` builds (the JSON written to
``bench/results/latest.json``): ``throughput`` maps a phase name to a client's figures,
``latency``, ``ceiling`` and ``storage`` hold one dict each, and any phase that failed
holds ``{"error": …}`` instead.  Targets are reported, never asserted: a miss is a
finding, not a crash.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Target:
    """A goal from the issue: ``figure`` of ``phase`` must reach ``minimum``."""

    phase: str
    figure: str
    minimum: float
    label: str


TARGETS = [
    Target("produce 1 KiB", "mb_per_second", 150.0, ">= 150 MB/s"),
    Target("consume 1 KiB", "mb_per_second", 300.0, ">= 300 MB/s"),
    Target("produce 100 B", "records_per_second", 300_000, ">= 300k rec/s"),
]


def target_verdicts(results: dict[str, Any]) -> dict[str, str]:
    """'phase' -> 'met >= …' / 'MISSED >= …' for every target whose phase ran."""
    verdicts = {}
    for target in TARGETS:
        figures = results["throughput"].get(target.phase, {})
        if target.figure in figures:
            met = figures[target.figure] >= target.minimum
            verdicts[target.phase] = ("met " if met else "MISSED ") + target.label
    return verdicts


# A share this close to one full core means that process could not go faster.
SATURATED_SHARE = 0.85
# Client + broker + everyone else above this fraction of all cores: the run was starved.
MACHINE_BUSY_FRACTION = 0.9


def limited_by(figures: dict[str, Any], cpus: int) -> str:
    """Which resource capped a throughput phase, judged from its CPU shares: a saturated
    broker first (the system under test), then a saturated load generator, then a machine
    whose cores were all busy (shared with other work), else none of them (waiting)."""
    client, broker = figures["client_cpu_share"], figures["broker_cpu_share"]
    if broker >= SATURATED_SHARE:
        return "broker CPU"
    if client >= SATURATED_SHARE:
        return "client CPU"
    if client + broker + figures["other_cpu_share"] >= MACHINE_BUSY_FRACTION * cpus:
        return "all CPUs busy"
    return "no CPU (waits)"


def ratio(numerator: float | None, denominator: float | None) -> str:
    if not numerator or not denominator:
        return "-"
    return f"{numerator / denominator:.2f}"


def render(results: dict[str, Any]) -> str:
    """The whole report as text, one section per kind of measurement."""
    lines = [f"brokerd data-plane benchmark  ({results['started_at']}, {results['cpus']} CPUs, "
             f"load average {results['load_average']:.1f} before the run)",
             "MB = 10^6 payload bytes; CPU = CPU seconds / wall seconds in cores: the client, "
             "the broker, and every other process on the machine; /loopback and /file write "
             "= MB/s over the machine ceiling below", ""]
    lines += _throughput_section(results)
    lines += _latency_section(results.get("latency", {}))
    lines += _rebalance_section(results.get("rebalance", {}))
    lines += _ceiling_section(results.get("ceiling", {}))
    lines += _storage_section(results.get("storage", {}))
    return "\n".join(lines)


def _row(cells: list[str], widths: list[int]) -> str:
    first, *rest = cells
    return first.ljust(widths[0]) + "".join(c.rjust(w) for c, w in zip(rest, widths[1:], strict=True))


def _throughput_section(results: dict[str, Any]) -> list[str]:
    widths = [16, 11, 11, 8, 8, 8, 8, 7, 7, 16, 21]
    ceiling = results.get("ceiling", {})
    loopback = ceiling.get("loopback_tcp_mb_per_second")
    file_write = ceiling.get("file_write_mb_per_second")
    verdicts = target_verdicts(results)
    lines = [_row(["phase", "records", "rec/s", "MB/s", "client", "broker", "other", "/loop",
                   "/file", "limited by", "target"], widths),
             _row(["", "", "", "", "CPU", "CPU", "CPU", "back", "write", "", ""], widths)]
    for phase, figures in results["throughput"].items():
        if "error" in figures:
            lines.append(f"{phase:<16}FAILED: {figures['error']}")
            continue
        mb = figures["mb_per_second"]
        lines.append(_row([
            phase, f"{figures['records']:,}", f"{figures['records_per_second']:,}", f"{mb:.1f}",
            f"{figures['client_cpu_share']:.2f}", f"{figures['broker_cpu_share']:.2f}",
            f"{figures['other_cpu_share']:.2f}",
            ratio(mb, loopback), ratio(mb, file_write) if "produce" in phase else "-",
            limited_by(figures, results["cpus"]), verdicts.get(phase, "")], widths))
    return lines + [""]


def _latency_section(latency: dict[str, Any]) -> list[str]:
    if "error" in latency:
        return [f"end-to-end latency: FAILED: {latency['error']}", ""]
    if not latency:
        return []
    consumer, producer = latency["consumer"], latency["producer"]
    if not consumer.get("records"):
        return ["end-to-end latency: no record arrived", ""]
    return [
        f"end-to-end latency ({latency['size']} B records at {latency['rate']:,}/s for "
        f"{latency['seconds']:g} s, acks=1, linger.ms=5): "
        f"p50 {consumer['p50_ms']:.2f} ms, p99 {consumer['p99_ms']:.2f} ms, "
        f"max {consumer['max_ms']:.2f} ms over {consumer['records']:,} records; "
        f"broker CPU {producer['broker_cpu_share']:.2f}, "
        f"other CPU {producer['other_cpu_share']:.2f}", ""]


def _rebalance_section(rebalance: dict[str, Any]) -> list[str]:
    if "error" in rebalance:
        return [f"group rebalance: FAILED: {rebalance['error']}", ""]
    if not rebalance:
        return []
    return [
        f"group rebalance (3 -> 4 members, heartbeat {rebalance['heartbeat_ms']} ms, "
        f"{rebalance['rounds']} rounds): p50 {rebalance['p50_ms']:.0f} ms, "
        f"max {rebalance['max_ms']:.0f} ms", ""]


def _ceiling_section(ceiling: dict[str, Any]) -> list[str]:
    if "error" in ceiling:
        return [f"machine ceiling: FAILED: {ceiling['error']}", ""]
    if not ceiling:
        return []
    return [
        f"machine ceiling ({ceiling['bytes'] / 1e6:,.0f} MB each): "
        f"loopback TCP {ceiling['loopback_tcp_mb_per_second']:.1f} MB/s, "
        f"file write {ceiling['file_write_mb_per_second']:.1f} MB/s (page cache), "
        f"{ceiling['file_write_fsync_mb_per_second']:.1f} MB/s (with fsync)", ""]


def _storage_section(storage: dict[str, Any]) -> list[str]:
    if "error" in storage:
        return [f"storage micro-benchmark: FAILED: {storage['error']}", ""]
    if not storage:
        return []
    return [
        f"storage micro-benchmark (Log.append_as_leader, {storage['batches']:,} batches of "
        f"{storage['batch_bytes']:,} B): append {storage['append_mb_per_second']:.1f} MB/s "
        f"({storage['append_records_per_second']:,} rec/s), read "
        f"{storage['read_mb_per_second']:.1f} MB/s, fsync {storage['fsync_seconds']:.2f} s", ""]


def write_json(results: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")

