"""Followers' fetch sessions (KIP-227) in a real three-broker cluster: a session that
gains a partition when leadership moves keeps every acknowledged record, and followers
of idle partitions, naming nothing in their incremental fetches, stay in the ISR for far
longer than ``replica.lag.time.max.ms`` while a stopped follower still leaves it."""

from __future__ import annotations

import time

from tests.integration.cluster.harness import REPLICA_LAG_MS, Cluster, wait_until
from tests.integration.cluster.sequence import SequenceProducer, assert_no_loss, read_all
from tests.integration.cluster.test_durability import (
    FAILOVER_BUDGET_S,
    assert_replicas_identical,
    new_leader_elected,
)

PARTITIONS = 3


def test_a_follower_session_survives_a_leadership_move(cluster: Cluster) -> None:
    """With three partitions every broker already has a session with every other; the
    partition whose leader stops (controlled shutdown) joins the surviving follower's
    session with the new leader incrementally."""
    topic = "moving"
    cluster.create_topic(topic, PARTITIONS, 3, {"min.insync.replicas": "2"})
    with SequenceProducer(cluster.bootstrap, topic, PARTITIONS) as producer:
        wait_until(lambda: producer.acked_count() > 100, 30, "the first acknowledgements")
        leader = cluster.leader(topic)
        acked_before = producer.acked_count()
        cluster.brokers[leader].stop()
        wait_until(lambda: new_leader_elected(cluster, topic, leader), FAILOVER_BUDGET_S,
                   f"a leader other than {leader}")
        wait_until(lambda: producer.acked_count() > acked_before + 100, 30,
                   "acknowledgements from the new leader")
        cluster.restart(leader)
        cluster.await_full_isr(topic, PARTITIONS)
        acked_back = producer.acked_count()
        wait_until(lambda: producer.acked_count() > acked_back + 100, 30,
                   "acknowledgements with the old leader following again")
    stored = read_all(cluster.bootstrap, topic, PARTITIONS)
    assert_no_loss(producer, stored)
    assert not producer.errors, producer.errors[:5]
    assert_replicas_identical(cluster, topic, PARTITIONS)


def full_isrs(cluster: Cluster, topic: str, via: int) -> bool:
    views = cluster.metadata(via, [topic])[topic].values()
    return all(set(view.isr) == set(view.replicas) for view in views)


def test_idle_caught_up_followers_stay_in_the_isr_and_a_stopped_one_leaves(
        cluster: Cluster) -> None:
    """Six partitions, traffic on one: the others' followers name nothing for three lag
    periods, yet no ISR shrinks.  Then one broker is stopped (SIGSTOP): it leaves the ISR
    of every partition it follows."""
    topic = "mostly-idle"
    cluster.create_topic(topic, 6, 3, {"min.insync.replicas": "2"})
    with SequenceProducer(cluster.bootstrap, topic, 1) as producer:  # partition 0 only
        wait_until(lambda: producer.acked_count() > 20, 30, "the first acknowledgements")
        idle_until = time.monotonic() + 3 * REPLICA_LAG_MS / 1000
        while time.monotonic() < idle_until:
            assert full_isrs(cluster, topic, via=1), cluster.metadata(1, [topic])
            time.sleep(0.25)
    stopped = 3
    cluster.pause(stopped)
    try:
        wait_until(lambda: all(stopped not in view.isr for view in cluster.metadata(
            1, [topic])[topic].values() if view.leader != stopped), FAILOVER_BUDGET_S,
            f"broker {stopped} to leave the ISRs")
    finally:
        cluster.resume(stopped)
    cluster.await_full_isr(topic, 6)
