"""Client quotas end to end: real broker processes, real ZooKeeper, confluent-kafka clients,
quotas written to ZooKeeper exactly as the control plane writes them (entity znode, then a
``/config/changes`` notification).  Rates are measured at the broker, from its Prometheus
byte counters, never from the client's own view."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

from kazoo.client import KazooClient

from tests.integration.brokerd.broker_process import BrokerProcess
from tests.integration.brokerd.quota_support import (
    MB,
    PushStats,
    consume,
    counter,
    create_topic,
    producer,
    push,
    scrape,
    set_quota,
)

QUOTA = 1 * MB
RUN_S = 15.0
# "After the first window": a cold client is assumed one empty window of history, so the
# first second may carry up to two seconds' worth, paid back by silence in the second one.
SETTLE_S = 2.0
TINY_QUOTA = 10_240


class ByteSampler:
    """Samples a broker's byte counter of one topic in a thread: (seconds, bytes) pairs."""

    def __init__(self, broker: BrokerProcess, name: str, topic: str,
                 interval_s: float = 0.25) -> None:
        self.samples: list[tuple[float, float]] = []
        self.missed: list[str] = []  # scrapes that failed
        self._read = lambda: counter(broker.metrics_port, name, topic=topic)
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ByteSampler:
        self.started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        """A scrape that fails (its 5 s timeout on a loaded machine) is counted and the
        sampling goes on: an exception here used to end the thread silently, and a run
        with 2 samples failed as if the counter had not moved."""
        while not self._stop.is_set():
            try:
                self.samples.append((time.monotonic() - self.started, self._read()))
            except OSError as exc:
                self.missed.append(repr(exc))
            self._stop.wait(self._interval_s)

    def rate(self, start_s: float, end_s: float = float("inf")) -> float:
        """Bytes/s between the first sample at or after ``start_s`` and the last before
        ``end_s``."""
        window = [(at, value) for at, value in self.samples if start_s <= at <= end_s]
        (first_at, first), (last_at, last) = window[0], window[-1]
        return (last - first) / (last_at - first_at)

    def settled_rate(self, settle_s: float) -> float:
        """Bytes/s from ``settle_s`` after the first byte moved until the last one did: the
        client's own timeline, whatever its connection set-up and shutdown take."""
        moved = [at for (_, previous), (at, value) in itertools.pairwise(self.samples)
                 if value > previous]
        assert moved, (f"the broker's counter never moved in {len(self.samples)} samples "
                       f"({len(self.missed)} scrapes failed: {self.missed[:3]})")
        return self.rate(moved[0] + settle_s, moved[-1])


def test_producer_and_consumers_are_held_at_their_byte_rates(
        start_broker: Callable[..., BrokerProcess], zk: KazooClient) -> None:
    broker = start_broker()
    for topic in ("produced", "consumed", "trickled"):
        create_topic(zk, topic, [1], [broker.bootstrap])
    # Data for the consumers, written by an unthrottled client before any quota exists.
    fill = PushStats()
    push(producer(broker.bootstrap, "filler", fill, {"batch.size": 65536}), "consumed", 4,
         fill, rate=10 * MB)
    small = producer(broker.bootstrap, "filler", fill, {"batch.size": 4096})
    push(small, "trickled", 1, fill, value_bytes=1000, rate=400_000)
    assert fill.delivered_bytes > 30 * MB and not fill.errors
    set_quota(zk, None, "capped-producer", {"producer_byte_rate": QUOTA})
    set_quota(zk, None, "capped-consumer", {"consumer_byte_rate": QUOTA})
    set_quota(zk, None, "tiny-consumer", {"consumer_byte_rate": TINY_QUOTA})
    time.sleep(0.5)  # the broker's watch delivers within milliseconds

    produced, consumed, trickled = PushStats(), PushStats(), PushStats()
    arrivals: list[float] = []
    big_fetches = {"fetch.max.bytes": 50 * 1024 * 1024,
                   "max.partition.fetch.bytes": 50 * 1024 * 1024,
                   "receive.message.max.bytes": 50 * 1024 * 1024 + 512}
    clients = [
        threading.Thread(target=lambda: push(
            producer(broker.bootstrap, "capped-producer", produced, {"batch.size": 65536}),
            "produced", RUN_S, produced)),
        threading.Thread(target=lambda: consume(
            broker.bootstrap, "capped-consumer", "consumed", RUN_S, consumed)),
        threading.Thread(target=lambda: arrivals.extend(consume(
            broker.bootstrap, "tiny-consumer", "trickled", RUN_S, trickled, big_fetches))),
    ]
    with ByteSampler(broker, "kafka_server_bytes_in_total", "produced") as bytes_in, \
            ByteSampler(broker, "kafka_server_bytes_out_total", "consumed") as bytes_out:
        for client in clients:
            client.start()
        for client in clients:
            client.join()

    produce_rate = bytes_in.settled_rate(SETTLE_S)
    fetch_rate = bytes_out.settled_rate(SETTLE_S)
    assert abs(produce_rate - QUOTA) <= 0.10 * QUOTA, produce_rate
    assert abs(fetch_rate - QUOTA) <= 0.10 * QUOTA, fetch_rate
    for stats in (produced, consumed, trickled):
        assert stats.throttle_events > 0 and stats.max_throttle_ms > 0
        assert stats.errors == []
    # The tiny quota still delivers every few seconds despite a 50 MB fetch size, and at
    # about its rate (cold burst of one window + RUN_S at 10 KB/s).
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
    assert len(arrivals) > 50 and max(gaps) < 4.0, max(gaps, default=None)
    assert trickled.delivered_bytes <= TINY_QUOTA * (RUN_S + 2)
    # The broker shows each entity's rate, limit, level and throttle time.
    metrics = _quota_metrics(broker)
    assert metrics["kafka_quota_limit", "produce", "capped-producer"] == (
        QUOTA, "/config/clients/<client-id>")
    assert metrics["kafka_quota_limit", "fetch", "tiny-consumer"] == (
        TINY_QUOTA, "/config/clients/<client-id>")
    assert metrics["kafka_quota_throttle_time_ms_total", "produce", "capped-producer"][0] > 0
    assert metrics["kafka_quota_throttle_time_ms_total", "fetch", "capped-consumer"][0] > 0
    rate, _ = metrics["kafka_quota_rate", "produce", "capped-producer"]
    assert abs(rate - QUOTA) <= 0.15 * QUOTA, rate


def _quota_metrics(broker: BrokerProcess) -> dict[tuple[str, str, str], tuple[float, str]]:
    """(metric, quota type, client id) -> (value, source label or "")."""
    found = {}
    for (name, labels), value in scrape(broker.metrics_port).items():
        tags = dict(labels)
        if name.startswith("kafka_quota_"):
            found[name, tags["quota_type"], tags["client_id"]] = (value, tags.get("source", ""))
    return found


LOW, HIGH = 300_000, 3 * MB
LIFT_DEADLINE_S = 2.0


def _lifted_at(sampler: ByteSampler, changed_s: float, threshold: float) -> float:
    """Seconds after ``changed_s`` at which the broker's 0.5 s rate first exceeds
    ``threshold`` (inf if never)."""
    samples = [(at, value) for at, value in sampler.samples if at >= changed_s]
    for (_, earlier), (later_at, later) in zip(samples, samples[2:], strict=False):
        if (later - earlier) / 0.5 > threshold:
            return later_at - changed_s
    return float("inf")


def test_a_raised_quota_applies_on_every_broker_within_two_seconds_and_survives_restarts(
        start_broker: Callable[..., BrokerProcess], zk: KazooClient) -> None:
    brokers = [start_broker(broker_id) for broker_id in (1, 2, 3)]
    create_topic(zk, "spread", [1, 2, 3], [b.bootstrap for b in brokers])
    set_quota(zk, None, "lifted", {"producer_byte_rate": LOW})
    time.sleep(0.5)
    stats = PushStats()
    client = producer(brokers[0].bootstrap, "lifted", stats, {"batch.size": 65536})
    changed_s = 5.0
    timer = threading.Timer(changed_s, set_quota, (zk, None, "lifted",
                                                   {"producer_byte_rate": HIGH}))
    samplers = [ByteSampler(b, "kafka_server_bytes_in_total", "spread") for b in brokers]
    for sampler in samplers:
        sampler.__enter__()
    timer.start()
    try:
        push(client, "spread", changed_s + 3, stats, partitions=(0, 1, 2))
    finally:
        for sampler in samplers:
            sampler.__exit__()
    # Quotas are per broker: each broker held the client at LOW before the change...
    for sampler in samplers:
        assert sampler.rate(SETTLE_S, changed_s) <= LOW * 1.2, sampler.rate(SETTLE_S, changed_s)
    # ...and every broker let it past LOW within 2 s of the znode + notification write.
    lifted = [_lifted_at(sampler, changed_s, 3 * LOW) for sampler in samplers]
    assert max(lifted) <= LIFT_DEADLINE_S, lifted
    assert stats.errors == [] and stats.throttle_events > 0

    # A restarted broker reads its quotas from ZooKeeper before it serves.
    set_quota(zk, None, "lifted", {"producer_byte_rate": LOW})
    restarted = brokers[1]
    restarted.stop()
    restarted.start()
    again = PushStats()
    with ByteSampler(restarted, "kafka_server_bytes_in_total", "spread") as sampler:
        push(producer(restarted.bootstrap, "lifted", again, {"batch.size": 65536}),
             "spread", 5, again, partitions=(1,))
    assert sampler.settled_rate(SETTLE_S) <= LOW * 1.1, sampler.settled_rate(SETTLE_S)
    assert again.throttle_events > 0
    metrics = _quota_metrics(restarted)
    assert metrics["kafka_quota_limit", "produce", "lifted"] == (
        LOW, "/config/clients/<client-id>")
