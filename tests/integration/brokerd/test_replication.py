"""Three real brokers replicating an RF=3 topic: acks=all, identical follower logs, the
high watermark as the consumers' limit, ISR shrink on a dead follower and rejoin."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from brokerd.protocol import ApiKey
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient
from tests.integration.brokerd.test_confluent import produce as confluent_produce

pytestmark = pytest.mark.integration

LAG_MS = 2000
TOPIC = "replicated"


def wait_for(predicate: Callable[[], object], timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


def partition_metadata(broker: BrokerProcess) -> dict | None:
    client = WireClient(broker.port)
    try:
        body = client.request(ApiKey.METADATA, 9, {"topics": [{"name": TOPIC}],
                                                   "allow_auto_topic_creation": False})
    finally:
        client.close()
    partitions = body["topics"][0]["partitions"]
    return partitions[0] if partitions and partitions[0]["error_code"] == 0 else None


def list_latest(broker: BrokerProcess) -> int:
    """The leader's "latest" offset, which is its high watermark."""
    client = WireClient(broker.port)
    try:
        body = client.request(ApiKey.LIST_OFFSETS, 4, {
            "replica_id": -1, "isolation_level": 0, "topics": [{"name": TOPIC, "partitions": [
                {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
    finally:
        client.close()
    answer = body["topics"][0]["partitions"][0]
    assert answer["error_code"] == 0, answer
    return int(answer["offset"])


def consumer_fetch_size(broker: BrokerProcess, offset: int) -> int:
    client = WireClient(broker.port)
    try:
        body = client.request(ApiKey.FETCH, 12, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
            "forgotten_topics_data": [], "topics": [{"topic": TOPIC, "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                 "last_fetched_epoch": -1, "log_start_offset": -1,
                 "partition_max_bytes": 1 << 20}]}]})
    finally:
        client.close()
    answer = body["responses"][0]["partitions"][0]
    assert answer["error_code"] == 0, answer
    return len(answer["records"] or b"")


def produce(bootstrap: str, count: int, acks: str) -> list[int]:
    """``count`` records to partition 0 (idempotent with acks=all); acknowledged offsets."""
    return confluent_produce(bootstrap, TOPIC, count, acks=acks,
                             **{"enable.idempotence": acks == "all",
                                "message.timeout.ms": 15000})


def segment_bytes(broker: BrokerProcess) -> bytes:
    return b"".join(path.read_bytes()
                    for path in sorted(Path(broker.log_dir, f"{TOPIC}-0").glob("*.log")))


def same_log(follower: BrokerProcess, leader: BrokerProcess) -> bool:
    return segment_bytes(follower) == segment_bytes(leader)


@pytest.fixture
def cluster(start_broker: Callable[..., BrokerProcess]) -> dict[int, BrokerProcess]:
    brokers = {broker_id: start_broker(broker_id, replica_lag_time_max_ms=str(LAG_MS),
                                       replica_fetch_wait_max_ms="200")
               for broker_id in (1, 2, 3)}
    admin = AdminClient({"bootstrap.servers": brokers[1].bootstrap})
    # Serving is not yet knowing the others: a broker learns registrations from its
    # ZooKeeper watch, and RF 3 needs all three (INVALID_REPLICATION_FACTOR otherwise).
    wait_for(lambda: len(admin.list_topics(timeout=5).brokers) == 3, 10, "three live brokers")
    futures = admin.create_topics([NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})])
    futures[TOPIC].result(10)
    for broker in brokers.values():
        wait_for(partial(partition_metadata, broker), 10, "leaders everywhere")
    return brokers


def test_acks_all_replicates_identical_batches_and_a_dead_follower_leaves_and_rejoins(
        cluster: dict[int, BrokerProcess]) -> None:
    state = partition_metadata(cluster[1])
    assert state is not None and sorted(state["isr_nodes"]) == [1, 2, 3]
    leader = cluster[state["leader_id"]]
    followers = [b for i, b in cluster.items() if i != state["leader_id"]]

    offsets = produce(leader.bootstrap, 500, acks="all")
    assert sorted(offsets) == list(range(500))
    assert list_latest(leader) == 500  # acknowledged means committed
    for follower in followers:
        wait_for(partial(same_log, follower, leader), 10,
                 f"broker {follower.broker_id}'s log to equal the leader's")

    # An idle follower dies: the leader drops it from the ISR after the lag time.
    dead = followers[-1]
    dead.kill()
    killed = time.monotonic()
    wait_for(lambda: dead.broker_id not in (partition_metadata(leader) or {}).get(
        "isr_nodes", [dead.broker_id]), LAG_MS / 1000 + 5, "the ISR to shrink")
    assert time.monotonic() - killed < LAG_MS / 1000 + 5
    for _ in range(10):  # and it stays out: a dead replica is never re-admitted
        time.sleep(0.15)
        assert dead.broker_id not in (partition_metadata(leader) or {})["isr_nodes"]

    dead.start()
    wait_for(lambda: dead.broker_id in (partition_metadata(leader) or {}).get("isr_nodes", []),
             15, "the restarted follower to rejoin the ISR")
    offsets = produce(leader.bootstrap, 10, acks="all")
    assert sorted(offsets) == list(range(500, 510))
    wait_for(partial(same_log, dead, leader), 10,
             "the rejoined follower's log to equal the leader's")


def test_consumers_read_only_up_to_the_high_watermark(cluster: dict[int, BrokerProcess]
                                                      ) -> None:
    state = partition_metadata(cluster[1])
    assert state is not None
    leader = cluster[state["leader_id"]]
    produce(leader.bootstrap, 10, acks="all")
    assert list_latest(leader) == 10
    for follower_id in state["replica_nodes"]:
        if follower_id != state["leader_id"]:
            cluster[follower_id].kill()
    # acks=1 is answered after the leader's append, but with both followers gone the high
    # watermark stays put until the ISR shrinks to the leader alone.
    produce(leader.bootstrap, 5, acks="1")
    assert list_latest(leader) == 10
    assert consumer_fetch_size(leader, 10) == 0
    wait_for(lambda: list_latest(leader) == 15, LAG_MS / 1000 + 5,
             "the high watermark to advance once the ISR shrank")
    assert consumer_fetch_size(leader, 10) > 0
