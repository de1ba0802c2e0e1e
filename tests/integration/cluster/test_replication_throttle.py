"""``leader.replication.throttled.rate``: a replica catching up behind a leader whose topic
lists it in ``leader.replication.throttled.replicas`` is fed at the configured rate, while
an unthrottled partition catching up from the same leaders at the same time, and the
in-sync followers of the throttled one, replicate as before (Kafka's leader
ReplicationQuotaManager)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from brokerd.protocol import ErrorCode
from tests.integration.cluster.harness import Cluster, produce, started_cluster, wait_until

RATE = 60_000  # bytes/s, leader side
FETCH_MAX = 65_536  # replica.fetch.max.bytes: the most one answer adds per partition
BATCH = [b"x" * 10_000] * 5  # 50 kB batches, below FETCH_MAX
BATCHES = 24  # 1.2 MB per topic to catch up
HANG_GUARD_S = 180


@pytest.fixture
def cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    yield from started_cluster(zk_connect, tmp_path, replica_fetch_max_bytes=str(FETCH_MAX))


def _set_leader_rate(cluster: Cluster, rate: int) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for broker_id in cluster.brokers:  # librdkafka: one BROKER resource per call
        resource = ConfigResource(ResourceType.BROKER, str(broker_id), incremental_configs=[
            ConfigEntry("leader.replication.throttled.rate", str(rate),
                        incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource], request_timeout=15)[resource].result(30)


def _fill(cluster: Cluster, topic: str) -> None:
    for _ in range(BATCHES):
        wait_until(lambda: produce(cluster, cluster.leader(topic), topic, BATCH, acks=1)[0]
                   == ErrorCode.NONE, 30, f"a write to {topic}")


def test_a_throttled_replica_catches_up_at_the_leader_rate_and_others_do_not_wait(
        cluster: Cluster) -> None:
    throttled, free = "moving", "free"
    cluster.create_topic(throttled, 1, 3,
                         {"leader.replication.throttled.replicas": "0:1,0:2,0:3"})
    cluster.create_topic(free, 1, 3)
    _set_leader_rate(cluster, RATE)
    cluster.kill(3)
    wait_until(lambda: all(cluster.leader(t) in (1, 2) for t in (throttled, free)), 30,
               "leaders on the brokers left")
    _fill(cluster, throttled)
    _fill(cluster, free)
    nbytes = BATCHES * sum(len(value) for value in BATCH)
    wait_until(lambda: all(3 not in cluster.view(t, via=1).isr for t in (throttled, free)), 30,
               "broker 3 out of both ISRs")

    started = time.monotonic()
    cluster.restart(3)
    caught_up: dict[str, float] = {}
    in_sync_lost: list[tuple[int, ...]] = []
    deadline = started + HANG_GUARD_S
    while len(caught_up) < 2:
        assert time.monotonic() < deadline, f"only {sorted(caught_up)} caught up"
        for topic in (throttled, free):
            try:
                isr = cluster.view(topic, via=1).isr
            except (OSError, ConnectionError, KeyError):
                continue
            if topic == throttled and not {1, 2} <= set(isr):
                in_sync_lost.append(isr)
            if 3 in isr and topic not in caught_up:
                caught_up[topic] = time.monotonic() - started
        time.sleep(0.1)

    print(f"catch-up of {nbytes} B: unthrottled {caught_up[free]:.1f} s "
          f"({nbytes / caught_up[free]:.0f} B/s), throttled at {RATE} B/s "
          f"{caught_up[throttled]:.1f} s ({nbytes / caught_up[throttled]:.0f} B/s)")
    # The leader's bucket holds one second's worth and one answer may overshoot it by a
    # fetch: the rest of the bytes cannot have arrived faster than the rate.
    assert caught_up[throttled] >= (nbytes - RATE - FETCH_MAX) / RATE
    assert caught_up[free] < caught_up[throttled], "the unthrottled partition waited"
    assert not in_sync_lost, f"in-sync followers were held back: {in_sync_lost}"
    cluster.await_full_isr(throttled)
