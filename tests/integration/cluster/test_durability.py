"""Kafka's promise under failures: an acknowledged (acks=all) record is never lost while one
in-sync replica lives, across leader crashes (kill -9), leader stalls (SIGSTOP longer than
``replica.lag.time.max.ms`` and than the ZooKeeper session), and divergent tails.

Every test ends by stopping the brokers and comparing the replicas' log files batch by
batch: no offset may hold two different records across replicas."""

from __future__ import annotations

import time

from tests.integration.cluster.harness import (
    SESSION_TIMEOUT_MS,
    Cluster,
    wait_until,
)
from tests.integration.cluster.sequence import SequenceProducer, assert_no_loss, read_all

PARTITIONS = 2
FAILOVER_BUDGET_S = SESSION_TIMEOUT_MS / 1000 + 10


def assert_replicas_identical(cluster: Cluster, topic: str, partitions: int) -> None:
    """Stop every broker, then compare the three replicas' batches (offset -> CRC)."""
    cluster.stop_all()
    for partition in range(partitions):
        logs = {b: cluster.replica_batches(b, topic, partition) for b in cluster.brokers}
        reference = logs[1]
        assert reference, f"{topic}-{partition} is empty on broker 1"
        for broker_id, batches in logs.items():
            assert batches == reference, (
                f"{topic}-{partition}: broker {broker_id} differs from broker 1 at offsets "
                f"{sorted(set(batches.items()) ^ set(reference.items()))[:5]}")


def new_leader_elected(cluster: Cluster, topic: str, old: int) -> bool:
    view = cluster.view(topic)
    return view.leader not in (old, -1) and old not in view.isr


def test_chasing_kills_lose_nothing_acknowledged(cluster: Cluster) -> None:
    topic = "chased"
    cluster.create_topic(topic, PARTITIONS, 3, {"min.insync.replicas": "2"})
    with SequenceProducer(cluster.bootstrap, topic, PARTITIONS) as producer:
        wait_until(lambda: producer.acked_count() > 100, 30, "the first acknowledgements")
        for _ in range(5):
            leader = cluster.leader(topic)
            acked_before = producer.acked_count()
            cluster.kill(leader)
            wait_until(lambda: new_leader_elected(cluster, topic, leader),  # noqa: B023
                       FAILOVER_BUDGET_S, f"a leader other than {leader}")
            wait_until(lambda: producer.acked_count() > acked_before + 50,  # noqa: B023
                       30, "acknowledgements from the new leader")
            cluster.restart(leader)
            cluster.await_full_isr(topic, PARTITIONS)
    stored = read_all(cluster.bootstrap, topic, PARTITIONS)
    assert_no_loss(producer, stored)
    assert not producer.errors, producer.errors[:5]
    assert_replicas_identical(cluster, topic, PARTITIONS)


def test_stalled_leaders_lose_nothing_acknowledged(cluster: Cluster) -> None:
    """SIGSTOP the leader past the replica lag (4 s), then past the session (8 s): the
    first only delays, the second makes the stalled leader a zombie that must be fenced
    when it wakes (its ISR writes fail, it truncates and follows)."""
    topic = "stalled"
    cluster.create_topic(topic, PARTITIONS, 3, {"min.insync.replicas": "2"})
    with SequenceProducer(cluster.bootstrap, topic, PARTITIONS) as producer:
        wait_until(lambda: producer.acked_count() > 100, 30, "the first acknowledgements")
        for pause_s in (4, 8, 4, 8):
            leader = cluster.leader(topic)
            acked_before = producer.acked_count()
            cluster.pause(leader)
            time.sleep(pause_s)
            cluster.resume(leader)
            wait_until(lambda: producer.acked_count() > acked_before + 50,  # noqa: B023
                       FAILOVER_BUDGET_S, "acknowledgements after the stall")
            cluster.await_full_isr(topic, PARTITIONS)
    stored = read_all(cluster.bootstrap, topic, PARTITIONS)
    assert_no_loss(producer, stored)
    assert_replicas_identical(cluster, topic, PARTITIONS)
