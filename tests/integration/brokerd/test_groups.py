"""Consumer groups end to end: real broker process, real ZooKeeper, real client processes.

For each client library, three consumers of one group share a 6-partition topic (two
partitions each) and read every record exactly once while nobody fails; then one is
SIGKILLed (no LeaveGroup), its partitions move to the other two once its session expires,
every record is still read at least once, and the committed offsets, sampled over the wire
throughout, never go backwards.  With two brokers, each group is coordinated by the leader
of its own ``__consumer_offsets`` partition and clients find it there.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

import pytest
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from brokerd.protocol import ApiKey, ErrorCode
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient
from tests.integration.brokerd.test_groups_harness import (
    CommittedOffsetsWatch,
    ConsumerProcess,
    consume,
    produce,
    wait_for,
)

pytestmark = pytest.mark.integration

PARTITIONS = 6
SESSION_S = 6.0
# After the session expires the survivors learn of the rebalance at their next heartbeat
# (0.5 s) and rejoin; the generation completes as soon as both have.  3 s covers that on a
# busy two-core machine.
REBALANCE_SLACK_S = 3.0
# Kafka's 3 s default delays only a new group's first generation; shortened for test time.
GROUP_BROKER_PROPS = {"group_initial_rebalance_delay_ms": "300",
                      "offsets_topic_num_partitions": "10"}


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=partitions,
                                  replication_factor=1)])[name].result(10)


def shares(consumers: list[ConsumerProcess]) -> list[list[int]]:
    return [consumer.assignment for consumer in consumers]


def covers_evenly(consumers: list[ConsumerProcess]) -> bool:
    """Every partition assigned exactly once and each member holds the same number."""
    assigned = [p for share in shares(consumers) for p in share]
    sizes = {len(share) for share in shares(consumers)}
    return sorted(assigned) == list(range(PARTITIONS)) and sizes == {
        PARTITIONS // len(consumers)}


def values_read(consumers: list[ConsumerProcess]) -> Counter[str]:
    return Counter(value for consumer in consumers for _, _, value in list(consumer.records))


@pytest.mark.parametrize("client", ["confluent", "kafka-python", "aiokafka"])
def test_three_consumers_share_and_survive_a_killed_member(
        start_broker: Callable[..., BrokerProcess], client: str) -> None:
    broker = start_broker(**GROUP_BROKER_PROPS)
    topic, group = f"orders-{client}", f"billing-{client}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    consumers = [ConsumerProcess(client, broker.bootstrap, topic, group,
                                 session_ms=int(SESSION_S * 1000)).start() for _ in range(3)]
    try:
        wait_for(lambda: covers_evenly(consumers), 40, f"2+2+2 partitions, got "
                 f"{shares(consumers)}")
        with CommittedOffsetsWatch(broker.port, group, topic, PARTITIONS) as watch:
            first = range(0, 1200)
            produce(broker.bootstrap, topic, PARTITIONS, first)
            wait_for(lambda: sum(values_read(consumers).values()) >= len(first), 20,
                     "the first 1200 records")
            time.sleep(0.3)  # a duplicate, if any, would arrive now
            assert values_read(consumers) == Counter(f"m-{i}" for i in first)  # exactly once
            for consumer in consumers:
                assert {p for p, _, _ in consumer.records} == set(consumer.assignment)

            victim, survivors = consumers[0], consumers[1:]
            victim.kill()
            second = range(1200, 2400)
            produce(broker.bootstrap, topic, PARTITIONS, second)
            moved_after = wait_for(lambda: covers_evenly(survivors),
                                   SESSION_S + REBALANCE_SLACK_S,
                                   f"3+3 partitions after the kill, got {shares(survivors)}")
            wait_for(lambda: set(values_read(survivors)) >= {f"m-{i}" for i in second}, 20,
                     "every record of the second batch")
            every = {f"m-{i}" for i in range(2400)}
            assert set(values_read(consumers)) == every  # at least once across the failure
            wait_for(lambda: bool(watch.samples) and watch.samples[-1] == dict.fromkeys(
                range(PARTITIONS), 400), 10, "all offsets committed")
        watch.assert_never_backwards(consumers)
        print(f"{client}: partitions moved {moved_after:.2f}s after the kill")
    finally:
        for consumer in consumers:
            consumer.stop()


def test_each_group_is_served_by_the_leader_of_its_offsets_partition(
        start_broker: Callable[..., BrokerProcess]) -> None:
    brokers = {b: start_broker(broker_id=b, **GROUP_BROKER_PROPS) for b in (1, 2)}
    create_topic(brokers[1].bootstrap, "shared", 2)
    produce(brokers[1].bootstrap, "shared", 2, range(40))
    wire = {b: WireClient(broker.port) for b, broker in brokers.items()}
    try:
        coordinator_of: dict[int, str] = {}  # broker id -> a group it coordinates
        for candidate in (f"team-{i}" for i in range(40)):
            found = wire[1].request(ApiKey.FIND_COORDINATOR, 3,
                                    {"key": candidate, "key_type": 0})
            assert found["error_code"] == 0 and found["port"] == brokers[
                found["node_id"]].port
            coordinator_of.setdefault(found["node_id"], candidate)
        assert sorted(coordinator_of) == [1, 2]  # 10 partitions split over both brokers
        for node, group in coordinator_of.items():
            records, _ = consume(brokers[1].bootstrap, "shared", group, 40)
            assert sorted(v for _, _, v in records) == sorted(f"m-{i}" for i in range(40))
            other = wire[3 - node]
            assert CommittedOffsetsWatch(brokers[node].port, group, "shared", 2).fetch(
                wire[node]) == {0: 20, 1: 20}
            refused = other.request(ApiKey.OFFSET_FETCH, 7, {
                "group_id": group, "require_stable": False,
                "topics": [{"name": "shared", "partition_indexes": [0]}]})
            assert refused["error_code"] == ErrorCode.NOT_COORDINATOR
    finally:
        for client in wire.values():
            client.close()
