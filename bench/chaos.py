"""Chaos: a random schedule of faults against a loaded cluster, then the checker's table.

Usage: ``.venv/bin/python -m bench.chaos [--minutes 10] [--seed N] [--fault-seconds 10]
[--gap-seconds 10]`` (root: it builds network namespaces and tmpfs log dirs).

Three brokers and a three-node ZooKeeper ensemble in private network namespaces
(:mod:`tests.faults.cluster`); the fault tests' workload runs throughout (idempotent
``acks=all`` producers and a consumer group over a 4-partition RF 3 topic).  Every
``fault-seconds + gap-seconds`` one fault of :data:`tests.faults.catalogue.FAULTS` is
chosen at random, held, and healed.  At the end the history is judged as in the tests:
lost, moved, duplicated and reordered records, divergent replicas, and consumers stuck
after the last healing.  Prints the schedule and the table; exits 1 when anything was
found.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from tests.faults.catalogue import FAULTS
from tests.faults.cluster import FaultCluster
from tests.faults.network import can_create
from tests.faults.scenario import CONSUMERS_BACK_S, WorkloadRun


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--fault-seconds", type=float, default=10.0)
    parser.add_argument("--gap-seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    reason = can_create()
    if reason is not None:
        print(f"chaos: {reason}", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    chooser = random.Random(seed)
    workdir = Path(tempfile.mkdtemp(prefix="chaos-"))
    print(f"chaos: seed {seed}, {args.minutes:g} min, output in {workdir}")
    cluster = FaultCluster(workdir)
    schedule: list[tuple[float, str, object]] = []
    try:
        cluster.start()
        run = WorkloadRun(cluster, workdir, "chaos").start()
        started = time.time()
        deadline = started + args.minutes * 60
        healed_at = started
        try:
            while time.time() + args.fault_seconds < deadline:
                time.sleep(args.gap_seconds)
                name = chooser.choice(sorted(FAULTS))
                try:
                    fault = FAULTS[name](cluster, {p: v[0] for p, v in run.views().items()})
                except Exception as exc:  # e.g. no ZooKeeper member leads right now
                    print(f"  {time.time() - started:7.1f} s  {name} not applied: {exc}")
                    continue
                schedule.append((time.time() - started, name, fault.target))
                print(f"  {schedule[-1][0]:7.1f} s  {name} ({fault.target})", flush=True)
                time.sleep(args.fault_seconds)
                fault.heal()
                healed_at = time.time()
            time.sleep(max(CONSUMERS_BACK_S + 5, deadline - time.time()))
            stopped_at = time.time()
        finally:
            run.stop()
        report = run.judge(must_consume=(healed_at + CONSUMERS_BACK_S, stopped_at - 2))
    finally:
        cluster.close()
    print(f"\n{len(schedule)} faults in {args.minutes:g} min (seed {seed}); "
          f"{run.delivery_errors} delivery errors")
    print(report.table())
    return 0 if report.clean else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
