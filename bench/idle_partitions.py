"""What idle partitions cost each broker, and how fast a broker leading many of them fails
over: the partition-density phases of the density benchmark (:mod:`bench.density`).

One three-broker cluster (the test harness's, with :data:`bench.failover.FAILOVER_PROPERTIES`:
Kafka's default 500 ms follower long poll, 10 s replica lag) grows to each partition count
in turn (RF 3, ``min.insync.replicas=2``, topics ``scale-<i>`` of ``per_topic`` partitions
each, the names :func:`bench.failover.measure` uses).  At each count, once every partition
has a leader and a full ISR on every broker's view, the cluster is left without traffic
and each broker's CPU (cores, /proc) is read over ``idle_seconds``, with its RSS, open
descriptors and memory mappings (the limits a large count hits, see :mod:`bench.limits`).

Growing is bounded per count: a count not created and in sync by its deadline is reported
as not reached, with how many partitions were created and how many were in sync, and the
larger counts are not attempted.  The failover is then measured over the partitions of the
largest count reached (a third of them led by the victim).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from bench.failover import measure, scale_topics
from bench.measure import idle_cpu_cores, process_rss_bytes
from tests.integration.brokerd import broker_process
from tests.integration.cluster.harness import Cluster

# Seconds between in-sync polls while growing: a Metadata answer for tens of thousands of
# partitions costs each broker a noticeable share of a core, so polling faster would slow
# what it waits for.
POLL_S = 3.0
# After the last partition joined its ISR: leader-epoch checkpoints, the first follower
# fetches and the creation's garbage settle before the idle window opens.
SETTLE_S = 5.0
# What a restarted broker gets to answer: log recovery after kill -9 is per replica.
RESTART_BASE_S = 20.0
RESTART_PER_REPLICA_S = 0.02


@dataclass
class BrokerIdle:
    """One broker at one partition count, without traffic."""

    cores: float
    cores_per_1000_partitions: float
    rss_mb: float
    open_files: int
    memory_maps: int


@dataclass
class CountFigures:
    """One partition count: reached or not, how far it got, and each broker's idle cost."""

    target: int
    reached: bool
    created: int
    in_sync: int
    grow_seconds: float
    brokers: dict[int, BrokerIdle] = field(default_factory=dict)
    other_cores: float = 0.0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def in_sync_count(cluster: Cluster, topics: list[str]) -> int:
    """Partitions of ``topics`` that every live broker sees with a live leader and a full
    ISR (the lowest count over the brokers' views); 0 when a broker does not answer."""
    live = set(cluster.live_ids())
    counts = []
    for broker_id in sorted(live):
        try:
            views = cluster.metadata(broker_id, topics)
        except OSError:
            return 0
        counts.append(sum(1 for partitions in views.values() for view in partitions.values()
                          if view.leader in live and set(view.isr) == set(view.replicas)))
    return min(counts, default=0)


def hosted_count(cluster: Cluster, topics: list[str]) -> int:
    """Partitions of ``topics`` whose log directory every live broker has created (the
    lowest count over the brokers).  Why: a new partition's ISR is full from the start
    (the controller names every live replica), so the brokers' views are in sync long
    before the brokers have created the logs; at 10,000 partitions that took them another
    20 s at half a core each, inside what was meant to be the idle window."""
    wanted = set(topics)
    counts = [sum(1 for entry in os.scandir(cluster.brokers[broker_id].log_dir)
                  if entry.name.rpartition("-")[0] in wanted)
              for broker_id in cluster.live_ids()]
    return min(counts, default=0)


def create(cluster: Cluster, topics: dict[str, int], deadline: float) -> tuple[int, str | None]:
    """Create ``topics`` (RF 3) in one CreateTopics request bounded by ``deadline``; return
    the partitions created and the first error."""
    remaining = max(deadline - time.monotonic(), 1.0)
    # The answer comes once every new partition has its leaders (tens of seconds at
    # 30,000); librdkafka gives up on a request in flight after socket.timeout.ms (60 s
    # by default, at most 300 s) whatever the operation's own timeout.
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap,
                         "socket.timeout.ms": int(min(remaining, 300.0) * 1000)})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=count, replication_factor=3,
                  config={"min.insync.replicas": "2"}) for name, count in topics.items()],
        operation_timeout=remaining, request_timeout=remaining)
    created, error = 0, None
    for name, future in futures.items():
        try:
            future.result(timeout=max(deadline - time.monotonic(), 1.0))
            created += topics[name]
        except (KafkaException, TimeoutError) as exc:
            error = error or f"{name}: {exc}"
    return created, error


def grow(cluster: Cluster, target: int, per_topic: int, bound_s: float,
         already: int) -> CountFigures:
    """Add topics until ``target`` partitions exist and wait until all are in sync and
    every broker has created their logs (RF 3 on three brokers: each hosts all of them),
    all within ``bound_s`` seconds."""
    started = time.monotonic()
    deadline = started + bound_s
    wanted = scale_topics(target // per_topic, per_topic)
    existing = scale_topics(already // per_topic, per_topic)
    created, error = create(cluster, {n: c for n, c in wanted.items() if n not in existing},
                            deadline)
    created += already
    names = list(wanted)
    synced = in_sync_count(cluster, names)
    while synced < target and time.monotonic() < deadline:
        time.sleep(POLL_S)
        synced = in_sync_count(cluster, names)
    while hosted_count(cluster, names) < target and time.monotonic() < deadline:
        time.sleep(POLL_S)
    reached = synced >= target and hosted_count(cluster, names) >= target
    return CountFigures(target, reached, created, synced,
                        round(time.monotonic() - started, 1), error=error)


def broker_pids(cluster: Cluster) -> dict[int, int]:
    return {b: p.process.pid for b, p in cluster.brokers.items()
            if p.process is not None and p.process.poll() is None}


def idle_cost(cluster: Cluster, figures: CountFigures, idle_seconds: float) -> None:
    """Fill ``figures.brokers`` with each broker's cost over ``idle_seconds`` of silence."""
    time.sleep(SETTLE_S)
    pids = broker_pids(cluster)
    sample = idle_cpu_cores(list(pids.values()), idle_seconds)
    for broker_id, pid in pids.items():
        cores = sample["cores"][pid]
        figures.brokers[broker_id] = BrokerIdle(
            round(cores, 4), round(cores * 1000 / figures.target, 4),
            round(process_rss_bytes(pid) / 1e6, 1), len(os.listdir(f"/proc/{pid}/fd")),
            sum(1 for _ in Path(f"/proc/{pid}/maps").open()))
    figures.other_cores = round(sample["other_cores"], 3)


def run(cluster: Cluster, counts: list[int], per_topic: int, bounds_s: list[float],
        idle_seconds: float) -> list[CountFigures]:
    """Grow through ``counts`` (ascending, multiples of ``per_topic``), measuring each;
    stop at the first count not reached in its bound."""
    results: list[CountFigures] = []
    reached = 0
    for target, bound in zip(counts, bounds_s, strict=True):
        figures = grow(cluster, target, per_topic, bound, reached)
        results.append(figures)
        if not figures.reached:
            break
        idle_cost(cluster, figures, idle_seconds)
        reached = target
    return results


@contextmanager
def broker_start_timeout(seconds: float) -> Iterator[None]:
    """Give a (re)starting harness broker ``seconds`` to answer, then restore the harness's
    own 20 s.  Why: after kill -9 a broker recovers every one of its logs before it
    listens (measured: 6,000 replicas took it over 20 s on this machine), so
    :func:`bench.failover.measure`'s restart of the victim would fail on the harness's
    bound, which is sized for tests with a few partitions."""
    previous = broker_process.START_TIMEOUT_S
    broker_process.START_TIMEOUT_S = max(previous, seconds)
    try:
        yield
    finally:
        broker_process.START_TIMEOUT_S = previous


def failover(cluster: Cluster, results: list[CountFigures], per_topic: int) -> dict[str, Any]:
    """:func:`bench.failover.measure` over the largest count reached; when a step fails,
    the figures of the steps before it and the error."""
    reached = [r.target for r in results if r.reached]
    if not reached:
        raise RuntimeError("no partition count was reached")
    progress: dict[str, Any] = {}
    with broker_start_timeout(RESTART_BASE_S + RESTART_PER_REPLICA_S * max(reached)):
        try:
            return measure(cluster, topic_count=max(reached) // per_topic,
                           partitions_per_topic=per_topic, create=False,
                           progress=progress).as_dict()
        except Exception as exc:  # the steps measured before it failed still count
            return {**progress, "error": f"{type(exc).__name__}: {exc}"}
