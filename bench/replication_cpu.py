"""CPU per MB of the acks=all RF 3 throughput path against acks=1 RF 1:
``python -m bench.replication_cpu [--rounds N] [--records N] [--py-spy DIR]``.

Why this figure: the throughput ratio of :func:`bench.replication.throughput` (acks=all
RF 3 MB/s ÷ acks=1 RF 1 MB/s) swings with whatever else the shared 2-core machine runs,
and on 2 cores three brokers plus the producer compete for the same CPU, so the CPU each
broker spends per replicated MB says where the time goes and changes little with load.
One three-broker cluster (the test harness); each round produces ``--records`` 1 KiB
records with the throughput client (1 MB batches, linger 5 ms) first acks=1 to a fresh
RF 1 topic, then acks=all to a fresh RF 3 topic (``min.insync.replicas=2``), both led by
broker 1.  Per phase: MB/s, CPU ms per MB of every broker (``/proc/<pid>/stat`` around
the client's run, so idle brokers count too) and of the client, and the machine's other
load.  The brokers and the client run in a memory cgroup refilled with clean page
cache before each phase (:mod:`bench.memory_cgroup`: fresh pages cost this VM ~3 ms of
CPU per MB written).  Prints one JSON line per phase and a median summary.  ``--py-spy DIR`` records
every broker with py-spy during the acks=all phases (``DIR/b<id>-r<round>.txt``,
raw stacks; ``BENCH_SAMPLER=perf``: ``perf record -g`` files); ``--profile DIR`` runs
the brokers under cProfile or, with ``BENCH_PROFILER=sampled``, under
:mod:`bench.sampled_broker` (CPU-time samples), as :mod:`bench.acks_all_cpu` does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.acks_all_cpu import three_brokers
from bench.measure import machine_busy_seconds, process_cpu_seconds
from bench.memory_cgroup import WarmPageCache, warm_page_cache
from bench.replication import (
    BROKERS_MEMORY_BYTES,
    LEADER,
    RECORD_BYTES,
    THROUGHPUT_PROPERTIES,
    isr_changes,
)
from bench.run_all import CLIENT_OVERHEAD_S, finish_client, start_client

PY_SPY = Path(sys.executable).parent / "py-spy"


def _sampler(spy: Path, broker_id: int, pid: int) -> list[str]:
    """py-spy (Python stacks) or, with ``BENCH_SAMPLER=perf``, ``perf record`` (CPU clock,
    on-CPU time only, C-level symbols) of one broker."""
    if os.environ.get("BENCH_SAMPLER") == "perf":
        return ["perf", "record", "-g", "-F", "999", "-o",
                str(spy.with_name(f"{spy.name}-b{broker_id}.perf")), "-p", str(pid)]
    return [str(PY_SPY), "record", "-r", "200", "-f", "raw", "-o",
            str(spy.with_name(f"{spy.name}-b{broker_id}.txt")), "-p", str(pid),
            "--nonblocking"]


def phase(cluster: Any, topic: str, acks: str, records: int, seconds: float,
          spy: Path | None, memory: WarmPageCache) -> dict[str, Any]:
    """One client run; the client joins the brokers' ``memory`` cgroup (its queue of
    hundreds of MB reuses pages too, as in :func:`bench.replication.produce`)."""
    pids = {b: p.process.pid for b, p in cluster.brokers.items() if p.process is not None}
    leader_pid = pids[LEADER]
    client = start_client("bench.throughput_client", [
        "produce", "--bootstrap", cluster.bootstrap, "--topic", topic,
        "--size", str(RECORD_BYTES), "--count", str(records), "--max-seconds", str(seconds),
        "--broker-pid", str(leader_pid), "--acks", acks])
    memory.add(client.pid)
    spies = []
    if spy is not None:
        spies = [subprocess.Popen(_sampler(spy, b, pid), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
                 for b, pid in pids.items()]
    before = {b: process_cpu_seconds(pid) for b, pid in pids.items()}
    machine_before = machine_busy_seconds()
    changes_before = isr_changes(cluster)
    result = finish_client(client, seconds + CLIENT_OVERHEAD_S)
    used = {b: process_cpu_seconds(pid) - before[b] for b, pid in pids.items()}
    machine = machine_busy_seconds() - machine_before
    for process in spies:
        process.send_signal(2)
        process.wait(30)
    megabytes = result["records"] * RECORD_BYTES / 1e6
    client_cpu = result["client_cpu_share"] * result["seconds"]
    return {
        "acks": acks, "mb_per_second": result["mb_per_second"], "seconds": result["seconds"],
        "broker_cpu_ms_per_mb": {b: round(s * 1000 / megabytes, 3) for b, s in used.items()},
        "brokers_cpu_ms_per_mb": round(sum(used.values()) * 1000 / megabytes, 3),
        "client_cpu_ms_per_mb": round(client_cpu * 1000 / megabytes, 3),
        # everything but the brokers and the client, from the whole phase (client start
        # included), in core-seconds
        "other_cpu_s": round(machine - sum(used.values()) - client_cpu, 2),
        "failed": result["failed"],
        "isr_changes": isr_changes(cluster) - changes_before,
    }


def measure(rounds: int, records: int, seconds: float, spy_dir: Path | None,
            profile: Path | None = None) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    phases: dict[str, list[dict[str, Any]]] = {"1": [], "all": []}
    with (three_brokers("replication-cpu", profile, **THROUGHPUT_PROPERTIES) as cluster,
          warm_page_cache([b.process.pid for b in cluster.brokers.values() if b.process],
                          BROKERS_MEMORY_BYTES, cluster.workdir) as memory):
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for round_ in range(rounds):
            rf1, rf3 = f"rf1-{round_}", f"rf3-{round_}"
            for future in admin.create_topics([
                    NewTopic(rf1, 1, replica_assignment=[[LEADER]]),
                    NewTopic(rf3, 1, replica_assignment=[[LEADER, 2, 3]],
                             config={"min.insync.replicas": "2"})]).values():
                future.result(timeout=60)
            cluster.await_full_isr(rf1)
            cluster.await_full_isr(rf3)
            for acks, topic in (("1", rf1), ("all", rf3)):
                spy = (spy_dir / f"r{round_}" if spy_dir is not None and acks == "all"
                       else None)
                memory.fill()
                figures = phase(cluster, topic, acks, records, seconds, spy, memory)
                figures["round"] = round_
                figures["memory"] = memory.description
                print(json.dumps(figures), flush=True)
                phases[acks].append(figures)

    def median(acks: str, key: str) -> float:
        return round(statistics.median(p[key] for p in phases[acks]), 3)

    ratios = [a["mb_per_second"] / b["mb_per_second"]
              for a, b in zip(phases["all"], phases["1"], strict=True) if b["mb_per_second"]]
    return {
        "acks=1 RF 1 MB/s": median("1", "mb_per_second"),
        "acks=all RF 3 MB/s": median("all", "mb_per_second"),
        "ratio (median of rounds)": round(statistics.median(ratios), 3) if ratios else None,
        "acks=1 brokers CPU ms/MB": median("1", "brokers_cpu_ms_per_mb"),
        "acks=all brokers CPU ms/MB": median("all", "brokers_cpu_ms_per_mb"),
        "acks=all per broker CPU ms/MB": {
            b: round(statistics.median(p["broker_cpu_ms_per_mb"][b] for p in phases["all"]), 3)
            for b in phases["all"][0]["broker_cpu_ms_per_mb"]},
        "acks=1 client CPU ms/MB": median("1", "client_cpu_ms_per_mb"),
        "acks=all client CPU ms/MB": median("all", "client_cpu_ms_per_mb"),
        "load_average": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.replication_cpu")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--py-spy", type=Path, dest="spy")
    parser.add_argument("--profile", type=Path, help="profile every broker for the whole "
                        "run (see bench/acks_all_cpu.py --profile)")
    args = parser.parse_args(argv)
    for directory in (args.spy, args.profile):
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
    print(json.dumps(measure(args.rounds, args.records, args.seconds, args.spy,
                             args.profile)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
