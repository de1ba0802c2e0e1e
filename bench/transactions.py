"""Transactional produce against idempotent acks=all, in one run:
``python -m bench.transactions [--records 20000] [--rounds 3]``.

One private ZooKeeper and one broker (``bench.cluster``).  Each round produces
``--records`` 1 KiB values with confluent-kafka three ways, back to back in rotating order
(the page cache fills as the run goes, so a fixed order would favour the first case):

- idempotent: ``enable.idempotence``, acks=all, linger.ms=5 (the baseline);
- transactions of 100 records, and of 1,000 records: ``begin_transaction``, produce,
  ``commit_transaction``, timing each commit call (EndTxn, markers are written after it).

Printed: records/s and MB/s per case, the ratio of each transactional case to the
baseline (median over rounds), and commit latency p50/p99 over every commit of the run.
Figures, not assertions: the machine is shared.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from confluent_kafka import Producer

from bench.cluster import Cluster

VALUE = b"x" * 1024
BASE: dict[str, Any] = {"linger.ms": 5, "compression.type": "none", "batch.size": 1_000_000,
                        "queue.buffering.max.kbytes": 1_000_000}


def _produce(producer: Producer, topic: str, count: int) -> None:
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, VALUE)
                break
            except BufferError:
                producer.poll(0.005)
        producer.poll(0)


def idempotent(bootstrap: str, topic: str, records: int) -> float:
    """Records/s of acknowledged idempotent acks=all produce."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "acks": "all", **BASE})
    started = time.monotonic()
    _produce(producer, topic, records)
    if producer.flush(120) != 0:
        raise RuntimeError("idempotent produce was not fully acknowledged")
    return records / (time.monotonic() - started)


def transactional(bootstrap: str, topic: str, records: int, per_txn: int,
                  commits_ms: list[float], round_number: int) -> float:
    """Records/s of committed transactions of ``per_txn`` records; commit times appended."""
    producer = Producer({"bootstrap.servers": bootstrap,
                         "transactional.id": f"bench-{per_txn}-{round_number}", **BASE})
    producer.init_transactions(60)
    started = time.monotonic()
    for _ in range(records // per_txn):
        producer.begin_transaction()
        _produce(producer, topic, per_txn)
        committing = time.perf_counter()
        producer.commit_transaction(60)
        commits_ms.append((time.perf_counter() - committing) * 1000)
    return records // per_txn * per_txn / (time.monotonic() - started)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cluster = Cluster.start()
    try:
        cluster.create_topics(["idem", "txn100", "txn1000"])
        commits: dict[int, list[float]] = {100: [], 1000: []}
        ratios: dict[int, list[float]] = {100: [], 1000: []}
        for round_number in range(1, args.rounds + 1):
            cases = ["idem", "txn100", "txn1000"]
            cases = cases[round_number % 3:] + cases[:round_number % 3]
            rates: dict[str, float] = {}
            for case in cases:
                if case == "idem":
                    rates[case] = idempotent(cluster.bootstrap, case, args.records)
                else:
                    per_txn = int(case.removeprefix("txn"))
                    rates[case] = transactional(cluster.bootstrap, case, args.records, per_txn,
                                                commits[per_txn], round_number)
            for per_txn in (100, 1000):
                ratios[per_txn].append(rates[f"txn{per_txn}"] / rates["idem"])
            print(f"round {round_number}: " + ", ".join(
                f"{case} {rate:8.0f} rec/s ({rate * len(VALUE) / 1e6:5.1f} MB/s)"
                for case, rate in rates.items()), flush=True)
        for per_txn in (100, 1000):
            print(f"transactions of {per_txn:>4} records: "
                  f"{statistics.median(ratios[per_txn]):.2f} x idempotent acks=all (median); "
                  f"commit p50 {percentile(commits[per_txn], 0.5):.1f} ms, "
                  f"p99 {percentile(commits[per_txn], 0.99):.1f} ms "
                  f"over {len(commits[per_txn])} commits")
        return 0
    finally:
        cluster.stop()


if __name__ == "__main__":
    raise SystemExit(main())
