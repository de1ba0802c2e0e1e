"""Rebalance time: how long a stable consumer group of three takes to absorb a fourth member.

Per round, on a fresh group over a 12-partition topic: three confluent-kafka consumers
join and settle (3 x 4 partitions) and run for a random fraction of a heartbeat interval
(a scale-out arrives at an arbitrary moment of the old members' heartbeat cycle; without
the pause every round would hit the same phase); then the clock starts right before the fourth
consumer's ``subscribe`` and stops at the last of the four assignment callbacks that
complete the new generation (4 x 3 partitions).  The eager protocol revokes everything, so
what is measured is the whole stop-the-world pause a scale-out costs.

What bounds it: the three old members learn about the rebalance only from their next
Heartbeat answer (REBALANCE_IN_PROGRESS), so with librdkafka's default
``heartbeat.interval.ms`` of 3 s the figure is up to one heartbeat interval (half of one on
average) plus the JoinGroup/SyncGroup round trips;
``--heartbeat-ms`` shows how it shrinks with faster heartbeats.  The broker's
``group.initial.rebalance.delay.ms`` applies only to a new group's first generation, i.e.
to the setup, not to the measured join.

Entry points: ``python bench/rebalance.py [--rounds N] [--heartbeat-ms MS]`` starts its own
ZooKeeper + broker (:mod:`bench.cluster`) and prints the samples with p50/max;
``bench.rebalance.run(cluster, rounds=5, heartbeat_ms=3000)`` returns the same figures as a
dict for ``bench/run_all.py``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
# ``python bench/rebalance.py`` puts bench/ (not the repository) first on sys.path.
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # noqa: E402

from bench.cluster import Cluster  # noqa: E402

TOPIC = "rebalance-bench"
PARTITIONS = 12
# Bounds for one round's two waits (settling of the first three, absorbing the fourth).
SETTLE_TIMEOUT_S = 30.0
SESSION_TIMEOUT_MS = 10_000


@dataclass
class Member:
    """One consumer polled by its own thread; records each assignment with its time."""

    bootstrap: str
    group: str
    heartbeat_ms: int
    assignments: list[tuple[float, list[int]]] = field(default_factory=list)
    subscribed_at: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Member:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                             "session.timeout.ms": SESSION_TIMEOUT_MS,
                             "heartbeat.interval.ms": self.heartbeat_ms,
                             "enable.auto.commit": False})

        def on_assign(_consumer: Any, partitions: list[Any]) -> None:
            self.assignments.append((time.monotonic(), sorted(tp.partition for tp in partitions)))

        self.subscribed_at = time.monotonic()
        consumer.subscribe([TOPIC], on_assign=on_assign)
        while not self._stop.is_set():
            consumer.poll(0.05)
        consumer.close()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(SETTLE_TIMEOUT_S)

    def assigned_since(self, since: float) -> list[int] | None:
        """The latest assignment if it arrived after ``since``."""
        if self.assignments and self.assignments[-1][0] >= since:
            return self.assignments[-1][1]
        return None


def _balanced(members: list[Member], since: float) -> bool:
    """Every member got an assignment after ``since`` and they split the topic evenly."""
    shares = [member.assigned_since(since) for member in members]
    if any(share is None for share in shares):
        return False
    assigned = sorted(p for share in shares for p in share or [])
    return assigned == list(range(PARTITIONS)) and {len(s or []) for s in shares} == {
        PARTITIONS // len(members)}


def _wait(condition: Any, what: str) -> None:
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} within {SETTLE_TIMEOUT_S}s")
        time.sleep(0.005)


def one_round(bootstrap: str, group: str, heartbeat_ms: int, phase: float) -> float:
    """Seconds from the fourth member's subscribe to the last assignment of the four; the
    fourth subscribes ``phase`` (0-1) of a heartbeat interval after the three settled."""
    members = [Member(bootstrap, group, heartbeat_ms).start() for _ in range(3)]
    try:
        _wait(lambda: _balanced(members, 0.0), "stable group of three")
        time.sleep(phase * heartbeat_ms / 1000)
        fourth = Member(bootstrap, group, heartbeat_ms)
        members.append(fourth.start())
        _wait(lambda: fourth.subscribed_at > 0, "subscribe of the fourth member")
        _wait(lambda: _balanced(members, fourth.subscribed_at), "group of four")
        return max(m.assignments[-1][0] for m in members) - fourth.subscribed_at
    finally:
        for member in members:
            member.stop()


def _prepare_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS,
                                  replication_factor=1)])[TOPIC].result(20)
    producer = Producer({"bootstrap.servers": bootstrap})  # so members have data to fetch
    for partition in range(PARTITIONS):
        producer.produce(TOPIC, b"x", partition=partition)
    producer.flush(20)


def run(cluster: Cluster, rounds: int = 5, heartbeat_ms: int = 3000) -> dict[str, Any]:
    """Measure ``rounds`` scale-outs (3 -> 4 members) on ``cluster``; figures in ms."""
    _prepare_topic(cluster.bootstrap)
    phases = random.Random(rounds)  # seeded: the same phases on every run
    samples_ms = [one_round(cluster.bootstrap, f"rebalance-{heartbeat_ms}-{n}", heartbeat_ms,
                            phases.random()) * 1000 for n in range(rounds)]
    return {"rounds": rounds, "heartbeat_ms": heartbeat_ms,
            "samples_ms": [round(s, 1) for s in samples_ms],
            "p50_ms": round(statistics.median(samples_ms), 1),
            "max_ms": round(max(samples_ms), 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--heartbeat-ms", type=int, default=3000,
                        help="consumers' heartbeat.interval.ms (librdkafka default 3000)")
    args = parser.parse_args(argv)
    cluster = Cluster.start()
    try:
        figures = run(cluster, args.rounds, args.heartbeat_ms)
    finally:
        cluster.stop()
    print(f"rebalance 3 -> 4 members, heartbeat.interval.ms={figures['heartbeat_ms']}: "
          f"p50 {figures['p50_ms']:.0f} ms, max {figures['max_ms']:.0f} ms "
          f"over {figures['rounds']} rounds {figures['samples_ms']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
