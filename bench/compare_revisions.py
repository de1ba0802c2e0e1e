"""Two revisions' brokers, measured in the same run: did a change make the data path
faster, slower, or leave it alone?

Usage: ``.venv/bin/python -m bench.compare_revisions BASE [HEAD] [--rounds 3]``.

Each revision is checked out into a temporary git worktree; for each round, each
revision's broker (started from its own checkout, with its own ZooKeeper) runs the same
phases, driven by *this* checkout's clients, so only the broker differs:

- produce 1 KiB records in ~1 MB requests (``make bench``'s produce phase);
- produce 1 KiB records in ~16 KiB and ~64 KiB requests (``batch.size``): small requests,
  where per-request costs such as copying the frame show;
- consume the 1 KiB records.

Rounds alternate the revisions (A B A B …) so a machine that gets busier mid-run disturbs
both alike.  Printed: the median over rounds of MB/s and of broker CPU microseconds per
MB for each phase and revision, and HEAD ÷ BASE.  Broker CPU per MB is the steadier
figure on a shared machine; MB/s is what clients see.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.cluster import Cluster
from bench.run_all import run_client
from tests.support.services import REPO_ROOT

RECORD_BYTES = 1024
PHASES = (  # name, batch bytes (None: the standard ~1 MB), records
    ("produce 1 KiB, ~1 MB requests", None, 200_000),
    ("produce 1 KiB, ~16 KiB requests", 16_384, 60_000),
    ("produce 1 KiB, ~64 KiB requests", 65_536, 60_000),
)
MAX_SECONDS = 60.0


def checkout(revision: str, into: Path) -> Path:
    subprocess.run(["git", "worktree", "add", "--detach", str(into), revision], cwd=REPO_ROOT,
                   check=True, capture_output=True, timeout=120)
    return into


def measure(source: Path, scale: float = 1.0) -> dict[str, dict[str, Any]]:
    """Every phase once against a fresh broker started from ``source``; ``scale``
    multiplies the record counts (more records, finer CPU figures)."""
    cluster = Cluster.start(source=source)
    figures: dict[str, dict[str, Any]] = {}
    try:
        topics = [f"p{index}" for index in range(len(PHASES))]
        cluster.create_topics(topics)
        for topic, (name, batch_bytes, count) in zip(topics, PHASES, strict=True):
            extra = ["--batch-bytes", str(batch_bytes)] if batch_bytes else []
            figures[name] = run_client("bench.throughput_client", [
                "produce", "--bootstrap", cluster.bootstrap, "--topic", topic,
                "--size", str(RECORD_BYTES), "--count", str(int(count * scale)),
                "--max-seconds", str(MAX_SECONDS), "--broker-pid", str(cluster.broker_pid),
                *extra], timeout_s=MAX_SECONDS * 3)
        figures["consume 1 KiB"] = run_client("bench.throughput_client", [
            "consume", "--bootstrap", cluster.bootstrap, "--topic", topics[0],
            "--count", str(figures[PHASES[0][0]].get("records", 0)),
            "--max-seconds", str(MAX_SECONDS), "--broker-pid", str(cluster.broker_pid)],
            timeout_s=MAX_SECONDS * 3)
    finally:
        cluster.stop()
    return figures


def cpu_us_per_mb(phase: dict[str, Any]) -> float | None:
    megabytes = phase.get("mb_per_second", 0) * phase.get("seconds", 0)
    if not megabytes:
        return None
    return phase["broker_cpu_share"] * phase["seconds"] / megabytes * 1e6


def median(values: list[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def report(runs: dict[str, list[dict[str, dict[str, Any]]]], base: str, head: str) -> str:
    names = [name for name, _, _ in PHASES] + ["consume 1 KiB"]
    lines = [f"{'phase':34} {'':6} {'BASE':>10} {'HEAD':>10} {'HEAD/BASE':>10}"]
    for name in names:
        for label, extract in (("MB/s", lambda p: p.get("mb_per_second")),
                               ("µs/MB", cpu_us_per_mb)):
            a = median([extract(r[name]) for r in runs[base] if name in r])
            b = median([extract(r[name]) for r in runs[head] if name in r])
            ratio = f"{b / a:10.2f}" if a and b else f"{'-':>10}"
            lines.append(f"{name:34} {label:6} {a or 0:10.1f} {b or 0:10.1f} {ratio}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("head", nargs="?", default="HEAD")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply every phase's record count (CPU is read in 10 ms ticks)")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="compare-"))
    sources = {args.base: checkout(args.base, workdir / "base"),
               args.head: checkout(args.head, workdir / "head")}
    runs: dict[str, list[dict[str, dict[str, Any]]]] = {args.base: [], args.head: []}
    try:
        for round_number in range(args.rounds):
            for revision, source in sources.items():
                print(f"round {round_number + 1}: {revision}", flush=True)
                runs[revision].append(measure(source, args.scale))
    finally:
        for source in sources.values():
            subprocess.run(["git", "worktree", "remove", "--force", str(source)],
                           cwd=REPO_ROOT, capture_output=True, timeout=60)
    print(f"\nBASE {args.base}, HEAD {args.head}, median of {args.rounds} rounds "
          "(µs/MB: broker CPU per MB of payload)")
    print(report(runs, args.base, args.head))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
