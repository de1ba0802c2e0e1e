"""Failover times of a three-broker cluster hosting 3,000 partitions (RF=3).

One broker leads a third of the partitions.  Measured, each as wall seconds:

* ``kill_s``: kill -9 of that broker -> every survivor's Metadata names a live leader for
  every partition (the issue's bound: ZooKeeper session timeout + 5 s);
* ``writable_s``: kill -9 -> a sample of the partitions it led all took an acks=all write
  again (:mod:`bench.writable`: what a producer waits for, which the answers of
  ``kill_s`` can precede while the new leaders apply their leadership);
* ``preferred_s``: its restart -> it leads its preferred partitions again (automatic
  preferred-leader election);
* ``controlled_s``: SIGTERM (controlled shutdown) -> no other broker names it leader of any
  partition (bound: 5 s), while an idempotent acks=all producer writes to partitions it
  led; that producer's delivery errors are reported (the bound: none).

Used by ``bench/replication.py`` (figures) and by
``tests/integration/cluster/test_failover.py`` (bounds), so both measure the same thing;
``bench/idle_partitions.py`` runs it over the thousands of partitions it has just created
(``create=False``), so the waits here are hang guards sized for those counts too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from bench.writable import WritableProbe, sample
from tests.integration.cluster.harness import Cluster, PartitionView, wait_until
from tests.integration.cluster.sequence import SequenceProducer, assert_no_loss, read_all

PROBE_TOPIC = "failover-probe"
# How the survivors are asked for metadata while waiting (:func:`wait_for_topics`): every
# POLL_S, only the topics not yet seen in the awaited state, about POLL_PARTITIONS
# partitions per request.  A 3,000-partition Metadata answer costs a broker tens of
# milliseconds; asking for all 30,000 partitions every 0.25 s (as this did first) kept a
# survivor's event loop busy answering the measurement instead of failing over.
POLL_S = 0.25
POLL_PARTITIONS = 3000
PROBE_PARTITIONS = 6
# The properties the measured cluster runs with, besides the harness's short timeouts.  The
# replica lag is 10 s (Kafka's default is 30 s), not the harness's 2 s: on two cores, three
# brokers switching 1,000 followers to new leaders at once need more than 2 s for their
# first fetches, and a 2 s lag turned each hand-over into a storm of ISR shrinks and
# expansions that the failover then had to wait behind.  Followers long-poll for Kafka's
# default 500 ms (the harness uses 200 ms): without fetch sessions every idle fetch names
# all of a follower's ~1,000 partitions, and polling faster made that the machine's main load.
FAILOVER_PROPERTIES = {
    "replica.lag.time.max.ms": "10000",
    "replica.fetch.wait.max.ms": "500",
    "leader.imbalance.check.interval.seconds": "2",
    "log.segment.bytes": "1048576",
}


@dataclass
class FailoverFigures:
    partitions: int
    led_by_victim: int
    kill_s: float = 0.0
    writable_s: float = 0.0
    writable_p50_s: float = 0.0
    preferred_s: float = 0.0
    controlled_s: float = 0.0
    shutdown_s: float = 0.0
    # kill -9 -> the answer that first showed each survivor's last topic settled
    # (kill_s is the later of them): which broker's view the figure waited for.
    kill_s_by_broker: dict[int, float] = field(default_factory=dict)
    produce_errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def create_topics(cluster: Cluster, topics: dict[str, int]) -> None:
    """Create ``name -> partition count`` topics (RF=3) in one request and wait until every
    partition has a leader and a full ISR on every broker's view."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=count, replication_factor=3,
                  config={"min.insync.replicas": "2"}) for name, count in topics.items()],
        operation_timeout=120, request_timeout=120)
    for future in futures.values():
        future.result(timeout=180)
    for name, count in topics.items():
        cluster.await_full_isr(name, count, timeout_s=180)


def led_by(cluster: Cluster, broker_id: int, topics: list[str], via: int
           ) -> dict[tuple[str, int], PartitionView]:
    return {(topic, p): view for topic, views in cluster.metadata(via, topics).items()
            for p, view in views.items() if view.leader == broker_id}


# (topic, partition -> the leader a broker names) -> whether the topic is as awaited
TopicHolds = Callable[[str, dict[int, int]], bool]


def wait_for_topics(cluster: Cluster, vias: list[int], counts: dict[str, int],
                    holds: TopicHolds, timeout_s: float, what: str,
                    settled_by: dict[int, float] | None = None) -> float:
    """Wait until ``holds(topic, its leaders)`` for every topic of ``counts`` in the
    Metadata of every broker of ``vias``; returns when the last of them was first seen to
    hold (``time.monotonic()`` as that answer arrived), and fills ``settled_by`` with
    that time per broker of ``vias``.

    What the states awaited here have in common: once reached, a topic stays in them
    (leadership does not move back), so a topic seen to hold is not asked for again.
    Each broker of ``vias`` is polled by a thread of its own every :data:`POLL_S`: first
    one request for its first remaining topics (about :data:`POLL_PARTITIONS`
    partitions), and only when all of those hold, the rest of its remaining topics at
    once, in concurrent requests of that size.  So while the failover runs the
    measurement costs each broker one Metadata request per :data:`POLL_S` (of a whole
    topic when topics are larger than that).  Only the leaders are read from the answers
    (:meth:`Cluster.leaders`): decoded whole, the 10,000-partition answers of the density
    benchmark cost this process half a core, on the machine the brokers fail over on.
    Why a thread per broker and not rounds over all of them: a round waited for the
    slowest broker's answers.  Why the rest at once and not one request after another:
    on a survivor busy taking over 5,000 leaderships a 3,000-partition Metadata request
    took 0.1-1.2 s, so asking for 30,000 partitions in turn reported the failover up to
    8 s after the survivor's log shows the last leader applied.  Why the time of the
    answer and not the time the wait ends: decoding the answers is the measurement's
    time, not the failover's."""
    started = time.monotonic()
    remaining = {via: list(counts) for via in vias}
    by_via = {via: started for via in vias}

    def ask(via: int, chunk: list[str]) -> tuple[set[str], float]:
        """The topics of ``chunk`` that hold, and when the answer came; none when the
        request failed (a busy broker may not answer within the client's timeout), so one
        failed request does not discard what the others found."""
        try:
            leaders = cluster.leaders(via, chunk)
        except (OSError, ConnectionError):
            return set(), time.monotonic()
        answered = time.monotonic()
        return {name for name in chunk if holds(name, leaders.get(name, {}))}, answered

    def sweep(via: int) -> bool:
        """One poll of ``via``; whether every topic now holds there."""
        chunks = _chunks(remaining[via], counts)
        answers = [ask(via, chunks[0])]
        if answers[0][0] == set(chunks[0]) and len(chunks) > 1:
            with ThreadPoolExecutor(len(chunks) - 1) as pool:
                answers += pool.map(lambda chunk: ask(via, chunk), chunks[1:])
        for settled, answered in answers:
            if settled:
                by_via[via] = max(by_via[via], answered)
        done = set().union(*(settled for settled, _ in answers))
        remaining[via] = [name for name in remaining[via] if name not in done]
        return not remaining[via]

    def poll(via: int) -> None:
        wait_until(lambda: sweep(via), timeout_s, f"{what} (broker {via})",
                   interval_s=POLL_S)
    with ThreadPoolExecutor(len(vias)) as pool:
        list(pool.map(poll, vias))
    if settled_by is not None:
        settled_by.update(by_via)
    return max(by_via.values())


def _chunks(names: list[str], counts: dict[str, int]) -> list[list[str]]:
    """``names`` in order, cut into requests of about :data:`POLL_PARTITIONS` partitions."""
    chunks: list[list[str]] = [[]]
    for name in names:
        if sum(counts[n] for n in chunks[-1]) >= POLL_PARTITIONS:
            chunks.append([])
        chunks[-1].append(name)
    return chunks


def wait_led_by_others(cluster: Cluster, counts: dict[str, int], gone: int,
                       timeout_s: float, what: str,
                       settled_by: dict[int, float] | None = None) -> float:
    """Every other live broker names a leader other than ``gone`` for every partition;
    returns when that was first seen (see :func:`wait_for_topics`)."""
    def holds(name: str, leaders: dict[int, int]) -> bool:
        return len(leaders) == counts[name] and all(
            leader not in (gone, -1) for leader in leaders.values())
    return wait_for_topics(cluster, [b for b in cluster.live_ids() if b != gone], counts,
                           holds, timeout_s, what, settled_by)


def scale_topics(topic_count: int, partitions_per_topic: int) -> dict[str, int]:
    """The names and sizes :func:`measure` fails over: ``scale-0`` … ``scale-<n-1>``."""
    return {f"scale-{i}": partitions_per_topic for i in range(topic_count)}


def measure(cluster: Cluster, topic_count: int = 3, partitions_per_topic: int = 1000,
            victim: int = 2, create: bool = True,
            progress: dict[str, Any] | None = None) -> FailoverFigures:
    """Fail over :func:`scale_topics` plus a probe topic; ``create=False`` when the
    caller already created the scale topics (the density benchmark fails over the
    partitions whose idle cost it just measured, instead of creating them twice).
    ``progress`` receives the figures measured so far after each step, so a caller can
    report them when a later step fails."""
    topics = scale_topics(topic_count, partitions_per_topic)
    create_topics(cluster, {**(topics if create else {}), PROBE_TOPIC: PROBE_PARTITIONS})
    counts = {**topics, PROBE_TOPIC: PROBE_PARTITIONS}
    names = list(counts)
    survivor = next(b for b in cluster.brokers if b != victim)
    preferred = led_by(cluster, victim, names, via=survivor)
    figures = FailoverFigures(sum(counts.values()), len(preferred))
    # The scale topics only: the probe topic's records are the sequence producer's.
    probe = WritableProbe(cluster, victim, sample(
        {key: view for key, view in preferred.items() if key[0] in topics}))

    started = time.monotonic()
    cluster.kill(victim)
    probe.start(started)
    settled_by: dict[int, float] = {}
    settled = wait_led_by_others(cluster, counts, victim, 120, "new leaders for every partition",
                                 settled_by)
    figures.kill_s = round(settled - started, 2)
    figures.kill_s_by_broker = {b: round(t - started, 2) for b, t in settled_by.items()}
    acked_after = sorted(probe.wait(120).values())
    if acked_after:  # none when the victim led none of the scale topics' partitions
        figures.writable_s = round(acked_after[-1], 2)
        figures.writable_p50_s = round(acked_after[len(acked_after) // 2], 2)
    _report(figures, progress)

    cluster.restart(victim)
    started = time.monotonic()

    def led_as_preferred(name: str, leaders: dict[int, int]) -> bool:
        return {(name, p) for p, leader in leaders.items() if leader == victim} == {
            key for key in preferred if key[0] == name}
    settled = wait_for_topics(cluster, [survivor], counts, led_as_preferred, 120,
                              "the restarted broker to lead its preferred partitions again")
    figures.preferred_s = round(settled - started, 2)
    _report(figures, progress)
    for name, count in topics.items():
        cluster.await_full_isr(name, count, timeout_s=120)
    cluster.await_full_isr(PROBE_TOPIC, PROBE_PARTITIONS, timeout_s=120)

    with SequenceProducer(cluster.bootstrap, PROBE_TOPIC, PROBE_PARTITIONS,
                          rate_per_s=100) as producer:
        wait_until(lambda: producer.acked_count() > 300, 30, "the probe producer")
        process = cluster.brokers[victim]
        started = time.monotonic()
        assert process.process is not None
        process.process.terminate()
        settled = wait_led_by_others(cluster, counts, victim, 60,
                                     "leadership to leave the stopping broker")
        figures.controlled_s = round(settled - started, 2)
        _report(figures, progress)
        process.process.wait(60)
        figures.shutdown_s = round(time.monotonic() - started, 2)
        acked = producer.acked_count()
        wait_until(lambda: producer.acked_count() > acked + 300, 30,
                   "acknowledgements after the shutdown")
    figures.produce_errors = producer.errors[:10]
    assert_no_loss(producer, read_all(cluster.bootstrap, PROBE_TOPIC, PROBE_PARTITIONS))
    return figures


def _report(figures: FailoverFigures, progress: dict[str, Any] | None) -> None:
    if progress is not None:
        progress.update(figures.as_dict())
