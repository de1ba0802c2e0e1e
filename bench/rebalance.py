"""Rebalance time: how long a stable consumer group of three takes to absorb a fourth member,
under the classic protocol and under KIP-848 (``group.protocol=consumer``), in one run.

Per round, on a fresh group over a 12-partition topic that a producer thread keeps writing
to (``RATE`` records/s): three confluent-kafka consumers join and settle (3 x 4 partitions)
and run for a random fraction of a heartbeat interval (a scale-out arrives at an arbitrary
moment of the old members' heartbeat cycle); then the clock starts right before the fourth
consumer's ``subscribe``.  Each round reports:

- ``first``: until the fourth member is given its first partitions;
- ``balanced``: until the four hold 3 partitions each;
- the records/s the three old members consumed between the fourth's subscribe and the
  balanced state, against the producer's rate: the eager classic protocol stops everyone
  for the rebalance, KIP-848 lets the old members keep their other partitions throughout.

What bounds it: old members learn of the newcomer only from their next heartbeat answer.
Classic: librdkafka's ``heartbeat.interval.ms`` (3 s default), then JoinGroup/SyncGroup
round trips.  KIP-848: the broker's ``group.consumer.heartbeat.interval.ms``; each old
member then revokes one partition and acknowledges at once, and the newcomer (asked to
heartbeat at a tenth of the interval while it waits) picks each up after its release.

Entry points: ``python bench/rebalance.py [--rounds N] [--heartbeat-ms MS]`` starts its own
ZooKeeper + broker (:mod:`bench.cluster`) and prints both protocols' samples with p50/max;
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
# Generous: on a starved machine librdkafka drops its coordinator connection whenever a
# ConsumerGroupHeartbeat outlives the heartbeat interval, and reconnects with a growing
# backoff (CI once saw a KIP-848 round still unsettled after 30 s of that).
SETTLE_TIMEOUT_S = 60.0
SESSION_TIMEOUT_MS = 10_000
#: Records/s the producer thread writes throughout, so the members always have work.
RATE = 2000


@dataclass
class Member:
    """One consumer polled by its own thread; records each change of its assignment and the
    time of every record it consumed."""

    bootstrap: str
    group: str
    heartbeat_ms: int
    protocol: str = "classic"
    assignments: list[tuple[float, list[int]]] = field(default_factory=list)
    consumed_at: list[float] = field(default_factory=list)
    subscribed_at: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Member:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _config(self) -> dict[str, Any]:
        config = {"bootstrap.servers": self.bootstrap, "group.id": self.group,
                  "auto.offset.reset": "latest", "enable.auto.commit": True}
        if self.protocol == "consumer":
            config["group.protocol"] = "consumer"  # the broker sets session and heartbeat
        else:
            config.update({"session.timeout.ms": SESSION_TIMEOUT_MS,
                           "heartbeat.interval.ms": self.heartbeat_ms})
        return config

    def _run(self) -> None:
        consumer = Consumer(self._config())
        owned: set[int] = set()
        incremental = self.protocol == "consumer"

        def on_assign(_consumer: Any, partitions: list[Any]) -> None:
            if not incremental:
                owned.clear()
            owned.update(tp.partition for tp in partitions)
            self.assignments.append((time.monotonic(), sorted(owned)))

        def on_revoke(_consumer: Any, partitions: list[Any]) -> None:
            owned.difference_update(tp.partition for tp in partitions)
            if incremental:
                self.assignments.append((time.monotonic(), sorted(owned)))

        self.subscribed_at = time.monotonic()
        consumer.subscribe([TOPIC], on_assign=on_assign, on_revoke=on_revoke)
        while not self._stop.is_set():
            message = consumer.poll(0.05)
            if message is not None and message.error() is None:
                self.consumed_at.append(time.monotonic())
        consumer.close()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(SETTLE_TIMEOUT_S)

    def share(self) -> list[int]:
        return self.assignments[-1][1] if self.assignments else []

    def first_partitions_at(self) -> float | None:
        return next((at for at, share in self.assignments if share), None)

    def consumed_between(self, start: float, end: float) -> int:
        return sum(1 for at in list(self.consumed_at) if start <= at <= end)


class SteadyProducer:
    """Writes ``RATE`` records/s round-robin over the partitions until stopped."""

    def __init__(self, bootstrap: str) -> None:
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        sent = 0
        started = time.monotonic()
        while not self._stop.is_set():
            due = int((time.monotonic() - started) * RATE)
            while sent < due:
                self._producer.produce(TOPIC, b"x", partition=sent % PARTITIONS)
                sent += 1
            self._producer.poll(0)
            time.sleep(0.005)
        self._producer.flush(10)

    def __enter__(self) -> SteadyProducer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(SETTLE_TIMEOUT_S)


def _balanced(members: list[Member]) -> bool:
    """The members split the topic evenly."""
    shares = [member.share() for member in members]
    assigned = sorted(p for share in shares for p in share)
    return assigned == list(range(PARTITIONS)) and {len(s) for s in shares} == {
        PARTITIONS // len(members)}


def _wait(condition: Any, what: str) -> None:
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} within {SETTLE_TIMEOUT_S}s")
        time.sleep(0.005)


@dataclass
class Round:
    first_s: float
    balanced_s: float
    old_members_rate: float  # records/s the three old members consumed meanwhile


def one_round(bootstrap: str, group: str, protocol: str, heartbeat_ms: int,
              phase: float) -> Round:
    """One scale-out; the fourth subscribes ``phase`` (0-1) of an old member's heartbeat
    interval after the three settled."""
    members = [Member(bootstrap, group, heartbeat_ms, protocol).start() for _ in range(3)]
    try:
        _wait(lambda: _balanced(members), "stable group of three")
        time.sleep(0.5 + phase * heartbeat_ms / 1000)
        fourth = Member(bootstrap, group, heartbeat_ms, protocol)
        members.append(fourth.start())
        _wait(lambda: fourth.subscribed_at > 0, "subscribe of the fourth member")
        start = fourth.subscribed_at
        _wait(lambda: _balanced(members), "group of four")
        balanced_at = time.monotonic()
        first_at = fourth.first_partitions_at() or balanced_at
        window = max(balanced_at - start, 1e-3)
        consumed = sum(m.consumed_between(start, balanced_at) for m in members[:3])
        return Round(first_at - start, balanced_at - start, consumed / window)
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


def _summary(rounds: list[Round]) -> dict[str, Any]:
    first = [r.first_s * 1000 for r in rounds]
    balanced = [r.balanced_s * 1000 for r in rounds]
    rates = [r.old_members_rate for r in rounds]
    return {"first_samples_ms": [round(x, 1) for x in first],
            "first_p50_ms": round(statistics.median(first), 1),
            "balanced_samples_ms": [round(x, 1) for x in balanced],
            "balanced_p50_ms": round(statistics.median(balanced), 1),
            "balanced_max_ms": round(max(balanced), 1),
            "old_members_records_per_s": [round(x) for x in rates],
            "old_members_records_per_s_p50": round(statistics.median(rates))}


def run(cluster: Cluster, rounds: int = 5, heartbeat_ms: int = 3000,
        kip848_heartbeat_ms: int = 250) -> dict[str, Any]:
    """Measure ``rounds`` scale-outs (3 -> 4 members) per protocol on ``cluster``.

    ``heartbeat_ms`` is the classic consumers' ``heartbeat.interval.ms``;
    ``kip848_heartbeat_ms`` the broker's ``group.consumer.heartbeat.interval.ms`` (only used
    to spread the fourth member's arrival over the old members' heartbeat cycle).
    Figures in ms; the classic ``p50_ms``/``max_ms`` keep their earlier meaning (balanced).
    """
    _prepare_topic(cluster.bootstrap)
    figures: dict[str, Any] = {"rounds": rounds, "heartbeat_ms": heartbeat_ms,
                               "producer_records_per_s": RATE}
    with SteadyProducer(cluster.bootstrap):
        for protocol, interval in (("classic", heartbeat_ms), ("consumer", kip848_heartbeat_ms)):
            phases = random.Random(rounds)  # seeded: the same phases on every run
            samples = [one_round(cluster.bootstrap, f"rebalance-{protocol}-{n}", protocol,
                                 interval, phases.random()) for n in range(rounds)]
            figures[protocol] = _summary(samples)
    classic = figures["classic"]
    figures.update(samples_ms=classic["balanced_samples_ms"], p50_ms=classic["balanced_p50_ms"],
                   max_ms=classic["balanced_max_ms"])
    return figures


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
    print(f"rebalance 3 -> 4 members over {figures['rounds']} rounds, producer "
          f"{figures['producer_records_per_s']} records/s")
    for protocol, label in (("classic", f"classic (heartbeat.interval.ms="
                                        f"{figures['heartbeat_ms']})"),
                            ("consumer", "KIP-848 group.protocol=consumer (broker defaults)")):
        f = figures[protocol]
        print(f"  {label}: fourth member's first partitions p50 {f['first_p50_ms']:.0f} ms "
              f"{f['first_samples_ms']}; balanced p50 {f['balanced_p50_ms']:.0f} ms, "
              f"max {f['balanced_max_ms']:.0f} ms; old members consumed "
              f"{f['old_members_records_per_s_p50']} records/s meanwhile "
              f"{f['old_members_records_per_s']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
