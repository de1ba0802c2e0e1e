"""CPU per acks=all request on RF 3: ``python bench/acks_all_cpu.py [--records N]``.

Why this figure: latency on a shared 2-core machine measures the other processes as much
as the brokers, while the CPU seconds each broker spends over a fixed count of requests
hardly depends on load.  Three brokers on loopback, one partition (replicas 1, 2, 3,
``min.insync.replicas=2``), confluent-kafka acks=all with idempotence and
``linger.ms=0``, 1 KiB records sent one at a time (each its own request, flushed before
the next) while one consumer long-polls.  Prints one JSON line: microseconds of CPU per
request on each broker and in total, the latency of those sequential requests, and the
machine load.

``--repo DIR`` runs another checkout's brokers (e.g. ``git archive`` of an older commit)
so two versions can be measured alternately in one session; ``--profile DIR`` runs the
brokers under :mod:`bench.profiled_broker`, writing ``DIR/b<id>.prof``; ``--py-spy DIR``
samples each broker with py-spy over the measured requests (``DIR/b<id>.txt``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TOPIC = "acks-all"
RECORD = b"x" * 1024
WARM_UP_RECORDS = 50


def _profiled_popen(directory: Path) -> type[subprocess.Popen[bytes]]:
    """Popen that starts ``python -m brokerd …`` as ``python -m bench.profiled_broker``
    (or, with ``BENCH_PROFILER=sampled``, :mod:`bench.sampled_broker`, writing
    ``b<id>.txt``)."""
    module, suffix = (("bench.sampled_broker", "txt")
                      if os.environ.get("BENCH_PROFILER") == "sampled"
                      else ("bench.profiled_broker", "prof"))

    class Profiled(subprocess.Popen[bytes]):
        def __init__(self, args: list[str], *rest: Any, **kwargs: Any) -> None:
            if args[1:3] == ["-m", "brokerd"]:
                broker_id = args[args.index("--broker-id") + 1]
                args = [args[0], "-m", module,
                        str(directory / f"b{broker_id}.{suffix}"), *args[3:]]
            super().__init__(args, *rest, **kwargs)

    return Profiled


def profile_brokers(directory: Path) -> None:
    """Start every harness broker from now on under the profiler (see
    :func:`_profiled_popen`), writing into ``directory``."""
    import tests.integration.brokerd.broker_process as broker_process

    directory.mkdir(parents=True, exist_ok=True)
    broker_process.subprocess.Popen = _profiled_popen(directory)  # type: ignore[misc,assignment]


def _sampler(spy: Path, broker_id: int, pid: int) -> list[str]:
    """py-spy (Python stacks, wall clock while runnable) or, with ``BENCH_SAMPLER=perf``,
    ``perf record`` (CPU clock: only on-CPU time, C-level symbols) of one broker."""
    if os.environ.get("BENCH_SAMPLER") == "perf":
        return ["perf", "record", "-F", "999", "-o", str(spy / f"b{broker_id}.perf"),
                "-p", str(pid)]
    return [str(Path(sys.executable).parent / "py-spy"), "record", "-r", "500", "-f", "raw",
            "-o", str(spy / f"b{broker_id}.txt"), "-p", str(pid), "--nonblocking"]


def _system_seconds(pid: int) -> float:
    """Kernel CPU seconds (stime) of ``pid``: the share of the CPU per request spent in
    system calls (socket writes on loopback carry the receiver's TCP processing too)."""
    from bench.measure import CLOCK_TICKS_PER_SECOND
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 1:].split()[12]) / CLOCK_TICKS_PER_SECOND


@contextmanager
def three_brokers(name: str, profile: Path | None, **properties: str) -> Iterator[Any]:
    """Three brokers (the test harness's cluster, with ``properties`` over its own) on a
    private ZooKeeper, each under cProfile writing into ``profile`` when given; everything
    stopped afterwards."""
    from tests.integration.cluster.harness import started_cluster
    from tests.support.services import start_zookeeper

    if profile is not None:
        profile_brokers(profile)
    zookeeper = start_zookeeper()
    try:
        with (tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as workdir,
              contextmanager(started_cluster)(f"{zookeeper.address}/{name}",
                                              Path(workdir), **properties) as cluster):
            yield cluster
    finally:
        zookeeper.stop()


def measure(records: int, profile: Path | None, spy: Path | None = None) -> dict[str, Any]:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    from bench.measure import percentile, process_cpu_seconds

    with three_brokers("acks-all", profile) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for future in admin.create_topics([NewTopic(
                TOPIC, 1, replica_assignment=[[1, 2, 3]],
                config={"min.insync.replicas": "2"})]).values():
            future.result(timeout=60)
        cluster.await_full_isr(TOPIC)
        stop = threading.Event()

        def consume() -> None:
            consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "c",
                                 "enable.auto.commit": False, "fetch.wait.max.ms": 100})
            consumer.assign([TopicPartition(TOPIC, 0, 0)])
            while not stop.is_set():
                consumer.poll(0.2)
            consumer.close()

        reader = threading.Thread(target=consume)
        reader.start()
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 0})
        for _ in range(WARM_UP_RECORDS):
            producer.produce(TOPIC, RECORD, partition=0)
            producer.flush()
        pids = {b: p.process.pid for b, p in cluster.brokers.items() if p.process}
        spies = [subprocess.Popen(_sampler(spy, b, pid), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
                 for b, pid in pids.items()] if spy is not None else []
        before = {b: process_cpu_seconds(pid) for b, pid in pids.items()}
        system_before = {b: _system_seconds(pid) for b, pid in pids.items()}
        latencies = []
        for _ in range(records):
            started = time.perf_counter()
            producer.produce(TOPIC, RECORD, partition=0)
            producer.flush()
            latencies.append(time.perf_counter() - started)
        used = {b: process_cpu_seconds(pid) - before[b] for b, pid in pids.items()}
        system = {b: _system_seconds(pid) - system_before[b] for b, pid in pids.items()}
        for spying in spies:
            spying.send_signal(2)
            spying.wait(30)
        stop.set()
        reader.join()
    latencies.sort()
    return {"records": records,
            "cpu_us_per_request": {b: round(s / records * 1e6) for b, s in used.items()},
            "total_cpu_us_per_request": round(sum(used.values()) / records * 1e6),
            "system_cpu_us_per_request": {b: round(s / records * 1e6) for b, s in system.items()},
            "p50_ms": round(percentile(latencies, 0.5) * 1000, 2),
            "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
            "load_average": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/acks_all_cpu.py")
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--py-spy", type=Path, dest="spy",
                        help="record each broker with py-spy (DIR/b<id>.txt, raw stacks)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.repo.resolve()))
    os.chdir(args.repo)
    if args.spy is not None:
        args.spy.mkdir(parents=True, exist_ok=True)
    print(json.dumps(measure(args.records, args.profile, args.spy)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
