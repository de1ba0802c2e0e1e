"""The ISR's guard rails: ``min.insync.replicas`` refuses acks=all writes in the protocol's
own terms when too few replicas are in sync, and a leader that crashed with a tail nobody
else has truncates that tail when it rejoins (leader epochs, and the diverging epoch of a
Fetch answer or, before Kafka 2.7-IV1, OffsetForLeaderEpoch)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from brokerd.protocol import ErrorCode
from tests.integration.cluster.harness import (
    SESSION_TIMEOUT_MS,
    Cluster,
    produce,
    started_cluster,
    wait_until,
)
from tests.integration.cluster.sequence import SequenceProducer, assert_no_loss, read_all
from tests.integration.cluster.test_durability import assert_replicas_identical

FAILOVER_BUDGET_S = SESSION_TIMEOUT_MS / 1000 + 10


def test_one_replica_left_refuses_acks_all(cluster: Cluster) -> None:
    topic = "guarded"
    cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "2"})
    with SequenceProducer(cluster.bootstrap, topic, 1) as producer:
        wait_until(lambda: producer.acked_count() > 50, 30, "the first acknowledgements")
        leader = cluster.leader(topic)
        followers = [b for b in cluster.brokers if b != leader]
        for follower in followers:
            cluster.kill(follower)
        wait_until(lambda: cluster.view(topic, via=leader).isr == (leader,),
                   FAILOVER_BUDGET_S, "the ISR to shrink to the leader")
        time.sleep(1)  # in-flight requests settle
        acked_alone = producer.acked_count()
        error, _ = produce(cluster, leader, topic, [b"0:-1"], acks=-1)
        assert error == ErrorCode.NOT_ENOUGH_REPLICAS
        error, _ = produce(cluster, leader, topic, [b"0:-2"], acks=1)
        assert error == ErrorCode.NONE  # acks=1 still works
        time.sleep(2)
        assert producer.acked_count() == acked_alone, "acks=all acknowledged with one replica"
        for follower in followers:
            cluster.restart(follower)
        cluster.await_full_isr(topic)
        wait_until(lambda: producer.acked_count() > acked_alone + 50, 30,
                   "acknowledgements once the followers are back")
    stored = read_all(cluster.bootstrap, topic, 1)
    numbers = [n for _, n in stored[0]]
    assert -1 not in numbers, "the refused acks=all record was stored"
    assert -2 in numbers
    assert_no_loss(producer, _without_wire_records(stored))
    assert_replicas_identical(cluster, topic, 1)


def _without_wire_records(stored: dict[int, list[tuple[int, int]]]
                          ) -> dict[int, list[tuple[int, int]]]:
    """The sequence producer's records only (the acks=1 probe wrote ``0:-2``)."""
    return {p: [(o, n) for o, n in records if n >= 0] for p, records in stored.items()}


@pytest.fixture(params=[None, "2.6"], ids=["truncating-on-fetch", "asking-epochs-first"])
def either_truncation(request: pytest.FixtureRequest, zk_connect: str, tmp_path: Path
                      ) -> Iterator[Cluster]:
    """A cluster whose followers truncate from Fetch answers (the default), or, at
    ``inter.broker.protocol.version`` 2.6, ask OffsetForLeaderEpoch first."""
    version = request.param
    properties = {"inter.broker.protocol.version": version} if version else {}
    yield from started_cluster(zk_connect, tmp_path, **properties)


def test_crashed_leader_truncates_its_divergent_tail(either_truncation: Cluster) -> None:
    cluster = either_truncation
    topic = "diverged"
    cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "1"})
    old_leader = cluster.leader(topic)
    error, _ = produce(cluster, old_leader, topic, [b"0:%d" % n for n in range(10)], acks=-1)
    assert error == ErrorCode.NONE
    followers = [b for b in cluster.brokers if b != old_leader]
    for follower in followers:  # shorter than the replica lag: they stay in the ISR
        cluster.pause(follower)
    # Let the fetches they had parked on the leader expire (replica.fetch.wait.max.ms):
    # a parked fetch would carry the tail into their socket buffers before the crash.
    time.sleep(0.6)
    error, tail_offset = produce(cluster, old_leader, topic, [b"0:%d" % n for n in
                                                             range(100, 105)], acks=1)
    assert (error, tail_offset) == (ErrorCode.NONE, 10)
    cluster.kill(old_leader)  # the tail exists on the old leader only
    for follower in followers:
        cluster.resume(follower)
    wait_until(lambda: cluster.view(topic).leader in followers, FAILOVER_BUDGET_S,
               "a follower to take over")
    new_leader = cluster.view(topic).leader
    error, offset = produce(cluster, new_leader, topic, [b"0:%d" % n for n in range(10, 13)],
                            acks=-1)
    assert (error, offset) == (ErrorCode.NONE, 10)
    cluster.restart(old_leader)
    cluster.await_full_isr(topic)
    stored = read_all(cluster.bootstrap, topic, 1)
    assert [n for _, n in stored[0]] == list(range(13))
    assert_replicas_identical(cluster, topic, 1)
