"""Replication benchmark: what acks=all on RF=3 costs against acks=1 on RF=1, and how fast
leadership fails over.  ``python bench/replication.py [--quick]``; prints a table and writes
``bench/results/replication.json``.

Both throughput phases run in the same three-broker cluster, one after the other, as
Kafka's own 2014 benchmark did (the 0.51 figure of issue 13): one producer, a topic of
:data:`PARTITIONS` partitions whose leaders are spread over the three brokers, the same
placement for the RF 1 and the RF 3 topic.  The brokers and the producer run in a memory
cgroup refilled with clean page cache before each phase (:mod:`bench.memory_cgroup`), so that neither
phase pays this VM's first-touch cost for fresh pages and their ratio is measured under
the same conditions.  Failover figures come from :mod:`bench.failover` (3,000 partitions).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.failover import FAILOVER_PROPERTIES, measure  # noqa: E402
from bench.memory_cgroup import WarmPageCache, warm_page_cache  # noqa: E402
from bench.run_all import (  # noqa: E402
    CLIENT_OVERHEAD_S,
    RESULTS_DIR,
    finish_client,
    start_client,
)
from tests.integration.cluster.harness import Cluster, started_cluster  # noqa: E402
from tests.support.services import start_zookeeper  # noqa: E402

LEADER = 1
RECORD_BYTES = 1024
# Kafka's 2014 replication benchmark produced to six partitions, led by three brokers.
PARTITIONS = 6
# The memory cgroup of the brokers and the producer: their own memory (about 150 MB per
# broker here, and the producer's queue of up to ~500 MB) plus a page cache that a phase
# (2,000,000 KiB records, three copies) overwrites several times over.
BROKERS_MEMORY_BYTES = 2560 * 1024 * 1024
# The throughput cluster runs with the brokers' defaults (Kafka's) for the replica lag and the
# follower's long poll, not the test harness's 2 s and 200 ms.  At full acks=all throughput
# the producer's five requests in flight keep several batches waiting on the leader, and a
# follower fetching one 1 MB batch per partition per round never holds everything the leader
# had at its previous fetch, so by Kafka's rule it is never caught up: with a 2 s lag each
# follower left and rejoined the ISR about once a second (43-60 ISR changes in a 10 s phase,
# 2026-12-04), and acks=all then often waited for one follower instead of two.
THROUGHPUT_PROPERTIES = {
    "replica.lag.time.max.ms": "30000",
    "replica.fetch.wait.max.ms": "500",
}
ISR_CHANGE_LINE = "proposing ISR"  # brokerd.replication.manager's log line for each proposal


def spread_assignment(partitions: int, replicas: int, brokers: int = 3) -> list[list[int]]:
    """Partition i led by broker ``1 + i % brokers``, its followers the next brokers."""
    return [[(i + r) % brokers + 1 for r in range(replicas)] for i in range(partitions)]


def isr_changes(cluster: Cluster) -> int:
    """ISR changes the cluster's leaders have proposed so far (their log lines)."""
    return sum(broker.output().count(ISR_CHANGE_LINE) for broker in cluster.brokers.values())


def produce(cluster: Cluster, topic: str, acks: str, records: int, seconds: float,
            memory: WarmPageCache) -> dict[str, Any]:
    """One producer to every partition of ``topic``; the CPU figures are broker 1's.  In
    the brokers' ``memory`` cgroup, so that the hundreds of MB it queues reuse pages too.
    ``isr_changes``: the ISR changes proposed meanwhile (a replicated figure measured while
    followers left the ISR waited for fewer copies)."""
    leader = cluster.brokers[LEADER]
    assert leader.process is not None
    client = start_client("bench.throughput_client", [
        "produce", "--bootstrap", cluster.bootstrap, "--topic", topic,
        "--size", str(RECORD_BYTES), "--count", str(records), "--max-seconds", str(seconds),
        "--broker-pid", str(leader.process.pid), "--acks", acks,
        "--partitions", str(PARTITIONS)])
    memory.add(client.pid)
    changes_before = isr_changes(cluster)
    figures = finish_client(client, seconds + CLIENT_OVERHEAD_S)
    return {**figures, "isr_changes": isr_changes(cluster) - changes_before}


def throughput(cluster: Cluster, records: int, seconds: float) -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics([
        NewTopic("rf1", num_partitions=PARTITIONS,
                 replica_assignment=spread_assignment(PARTITIONS, 1)),
        NewTopic("rf3", num_partitions=PARTITIONS,
                 replica_assignment=spread_assignment(PARTITIONS, 3),
                 config={"min.insync.replicas": "2"})])
    for future in futures.values():
        future.result(timeout=60)
    cluster.await_full_isr("rf1", PARTITIONS)
    cluster.await_full_isr("rf3", PARTITIONS)
    pids = [b.process.pid for b in cluster.brokers.values() if b.process is not None]
    with warm_page_cache(pids, BROKERS_MEMORY_BYTES, cluster.workdir) as memory:
        memory.fill()
        baseline = produce(cluster, "rf1", "1", records, seconds, memory)
        memory.fill()
        replicated = produce(cluster, "rf3", "all", records, seconds, memory)
    ratio = (replicated["mb_per_second"] / baseline["mb_per_second"]
             if baseline.get("mb_per_second") else None)
    return {"acks=1 RF=1": baseline, "acks=all RF=3": replicated,
            "ratio": round(ratio, 3) if ratio is not None else None,
            "partitions": PARTITIONS, "brokers_memory": memory.description}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/replication.py")
    parser.add_argument("--quick", action="store_true", help="a tenth of the work")
    parser.add_argument("--skip-failover", action="store_true")
    args = parser.parse_args(argv)
    records, seconds = (50_000, 5.0) if args.quick else (2_000_000, 60.0)  # see density.py
    zookeeper = start_zookeeper()
    results: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-replication-") as workdir:
            for phase in ("t", "f"):
                (Path(workdir) / phase).mkdir()
            with contextmanager(started_cluster)(f"{zookeeper.address}/throughput",
                                                 Path(workdir) / "t",
                                                 **THROUGHPUT_PROPERTIES) as cluster:
                results["throughput"] = throughput(cluster, records, seconds)
            if not args.skip_failover:
                with contextmanager(started_cluster)(f"{zookeeper.address}/failover",
                                                     Path(workdir) / "f",
                                                     **FAILOVER_PROPERTIES) as cluster:
                    partitions = 100 if args.quick else 1000
                    results["failover"] = measure(cluster, partitions_per_topic=partitions
                                                  ).as_dict()
    finally:
        zookeeper.stop()
    report(results)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "replication.json").write_text(json.dumps(results, indent=2))
    return 0


def report(results: dict[str, Any]) -> None:
    throughput = results.get("throughput", {})
    for label in ("acks=1 RF=1", "acks=all RF=3"):
        figures = throughput.get(label, {})
        print(f"{label:>14}: {figures.get('mb_per_second')} MB/s, "
              f"{figures.get('records_per_second')} rec/s, "
              f"broker 1 CPU {figures.get('broker_cpu_share')}, failed {figures.get('failed')}, "
              f"ISR changes {figures.get('isr_changes')}")
    print(f"{'ratio':>14}: {throughput.get('ratio')} (acks=all RF=3 / acks=1 RF=1, "
          f"{throughput.get('partitions')} partitions)")
    print(f"{'brokers memory':>14}: {throughput.get('brokers_memory')}")
    for key, value in results.get("failover", {}).items():
        print(f"{key:>14}: {value}")


if __name__ == "__main__":
    sys.exit(main())
