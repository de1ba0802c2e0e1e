"""Helpers for the quota tests and ``bench/noisy_neighbour.py``: quota writes done as the
control plane does them, broker-side measurement from Prometheus, and a confluent-kafka
producer/consumer that push as fast as they can while recording throttles and errors."""

from __future__ import annotations

import functools
import time
import urllib.request
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient
from prometheus_client.parser import text_string_to_metric_families

from brokerd.coordination.znodes import TopicAssignment
from tenants import znodes
from tenants import zookeeper as control_plane

MB = 1_000_000


def set_quota(zk: KazooClient, user: str | None, client_id: str | None,
              config: Mapping[str, int] | None) -> None:
    """Write (None: remove) a quota entity plus its ``/config/changes`` notification."""
    values = {key: str(value) for key, value in config.items()} if config is not None else None
    control_plane.put_config(zk, znodes.entity_path(user, client_id), values)


def scrape(metrics_port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """One Prometheus scrape: (sample name, sorted labels) -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as page:
        text = page.read().decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def counter(metrics_port: int, name: str, **labels: str) -> float:
    """Sum of the samples of ``name`` whose labels include ``labels`` (0 when absent)."""
    return sum(value for (sample, sample_labels), value in scrape(metrics_port).items()
               if sample == name and set(labels.items()) <= set(sample_labels))


def create_topic(zk: KazooClient, name: str, leaders: list[int],
                 bootstraps: list[str]) -> None:
    """An RF=1 topic whose partition ``p`` lives on broker ``leaders[p]``, written the way
    brokerd's CreateTopics writes it (the config, then the assignment: a placement the
    admin API cannot ask for); returns once every broker in ``bootstraps`` reports a leader
    for every partition."""
    control_plane.put(zk, znodes.config_znode(znodes.topic_config_path(name)),
                      znodes.config_payload({}))
    control_plane.put(zk, znodes.topic_znode(name), TopicAssignment(
        uuid.uuid4(), {p: (leader,) for p, leader in enumerate(leaders)}).encode())
    for bootstrap in bootstraps:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        deadline = time.monotonic() + 20
        while True:
            topic = admin.list_topics(name, timeout=5).topics.get(name)
            if (topic is not None and topic.error is None and len(topic.partitions) == len(leaders)
                    and all(p.leader >= 0 for p in topic.partitions.values())):
                break
            assert time.monotonic() < deadline, f"{name} has no leaders on {bootstrap}"
            time.sleep(0.1)


@dataclass
class PushStats:
    """What a client saw: delivered bytes, throttle reports, errors, per-message latency."""

    delivered_bytes: int = 0
    throttle_events: int = 0
    max_throttle_ms: int = 0
    errors: list[str] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)

    def on_throttle(self, event: Any) -> None:
        self.throttle_events += 1
        self.max_throttle_ms = max(self.max_throttle_ms, int(event.throttle_time * 1000))


def producer(bootstrap: str, client_id: str, stats: PushStats,
             extra: Mapping[str, Any] | None = None) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "client.id": client_id,
                     "linger.ms": 5, "queue.buffering.max.kbytes": 4096,
                     "message.timeout.ms": 120_000, "throttle_cb": stats.on_throttle,
                     "error_cb": lambda error: stats.errors.append(str(error)),
                     **(extra or {})})


def push(client: Producer, topic: str, seconds: float, stats: PushStats,
         value_bytes: int = 10_000, rate: float | None = None,
         partitions: tuple[int, ...] = (0,)) -> None:
    """Produce ``value_bytes`` messages for ``seconds`` round-robin over ``partitions``: as
    fast as the client can, or at ``rate`` bytes/s; undelivered messages are purged at the
    end (not counted)."""
    value = b"x" * value_bytes
    started = time.monotonic()
    deadline = started + seconds
    sent = 0

    def delivered(error: KafkaError | None, message: Any, enqueued: float) -> None:
        if error is not None:
            if error.code() != KafkaError._PURGE_QUEUE:
                stats.errors.append(str(error))
            return
        stats.delivered_bytes += len(message.value())
        stats.latencies_s.append(time.monotonic() - enqueued)

    while (now := time.monotonic()) < deadline:
        if rate is not None and sent >= rate * (now - started):
            client.poll(0.002)
            continue
        try:
            client.produce(topic, value, partition=partitions[sent // value_bytes
                                                              % len(partitions)],
                           on_delivery=functools.partial(delivered, enqueued=now))
            sent += value_bytes
        except BufferError:
            client.poll(0.01)
        client.poll(0)
    client.purge(in_flight=False)
    client.flush(30)


def consume(bootstrap: str, client_id: str, topic: str, seconds: float, stats: PushStats,
            extra: Mapping[str, Any] | None = None) -> list[float]:
    """Read partition 0 of ``topic`` from the start for ``seconds`` (assigned: no group
    rebalance delays the start); returns the arrival times of messages."""
    client = Consumer({"bootstrap.servers": bootstrap, "client.id": client_id,
                       "group.id": f"{client_id}-group", "enable.auto.commit": False,
                       "throttle_cb": stats.on_throttle,
                       "error_cb": lambda error: stats.errors.append(str(error)),
                       **(extra or {})})
    client.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    arrivals = []
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            message = client.poll(0.1)
            if message is None:
                continue
            if message.error() is not None:
                stats.errors.append(str(message.error()))
                continue
            stats.delivered_bytes += len(message.value() or b"")
            arrivals.append(time.monotonic())
    finally:
        client.close()
    return arrivals
