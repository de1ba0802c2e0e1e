"""ElectLeaders through confluent-kafka's AdminClient (``elect_leaders``, what
``kafka-leader-election`` sends) against three real brokers: a preferred election moves
leadership back after a failover, a repeated or needless one says why, an unknown
partition is named, and a broker that is not the controller sends the client on (for
ListPartitionReassignments too)."""

from __future__ import annotations

from confluent_kafka import ElectionType, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from brokerd.protocol import ApiKey, ErrorCode
from tests.integration.brokerd.broker_process import WireClient
from tests.integration.cluster.harness import SESSION_TIMEOUT_MS, Cluster, wait_until

FAILOVER_BUDGET_S = SESSION_TIMEOUT_MS / 1000 + 20
TOPIC = "elected"


def _elect(admin: AdminClient, election_type: ElectionType,
           partitions: list[TopicPartition] | None) -> dict[tuple[str, int], int]:
    """(topic, partition) -> Kafka error code (0: elected)."""
    # (confluent-kafka 2.16 refuses this call's timeout keywords: the defaults apply.)
    answer = admin.elect_leaders(election_type, partitions).result(timeout=60)
    return {(tp.topic, tp.partition): 0 if error is None else error.code()
            for tp, error in answer.items()}


def test_preferred_election_moves_leadership_back_once_needed(cluster: Cluster) -> None:
    cluster.create_topic(TOPIC, 1, 3)
    preferred = cluster.view(TOPIC).replicas[0]
    assert cluster.leader(TOPIC) == preferred
    cluster.kill(preferred)
    survivor = next(b for b in cluster.live_ids() if b != preferred)
    wait_until(lambda: cluster.view(TOPIC, via=survivor).leader not in (preferred, -1),
               FAILOVER_BUDGET_S, "a new leader after the preferred replica died")
    cluster.restart(preferred)
    cluster.await_full_isr(TOPIC)
    moved_to = cluster.view(TOPIC, via=survivor).leader
    assert moved_to != preferred  # no automatic rebalance within the test's time

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    partition = TopicPartition(TOPIC, 0)
    assert _elect(admin, ElectionType.PREFERRED, [partition]) == {(TOPIC, 0): 0}
    wait_until(lambda: all(cluster.view(TOPIC, via=b).leader == preferred
                           for b in cluster.live_ids()), 30,
               "every broker to name the preferred replica as leader")

    assert _elect(admin, ElectionType.PREFERRED, [partition]) == {
        (TOPIC, 0): KafkaError.ELECTION_NOT_NEEDED}
    assert _elect(admin, ElectionType.UNCLEAN, [partition]) == {
        (TOPIC, 0): KafkaError.ELECTION_NOT_NEEDED}
    assert _elect(admin, ElectionType.PREFERRED, [TopicPartition(TOPIC, 5)]) == {
        (TOPIC, 5): KafkaError.UNKNOWN_TOPIC_OR_PART}
    # None: every partition of the cluster; all of them are led by their preferred replica.
    everything = _elect(admin, ElectionType.PREFERRED, None)
    assert everything[(TOPIC, 0)] == KafkaError.ELECTION_NOT_NEEDED
    assert set(everything.values()) == {KafkaError.ELECTION_NOT_NEEDED}


def test_unclean_election_brings_an_offline_partition_back(cluster: Cluster) -> None:
    """The case KIP-460 is for: the last in-sync replica is gone for good, an out-of-sync
    one is alive, and the topic does not allow unclean elections by itself."""
    cluster.create_topic(TOPIC, 1, 2)
    leader, follower = cluster.view(TOPIC).replicas
    bystander = next(b for b in cluster.live_ids() if b not in (leader, follower))
    cluster.kill(follower)
    wait_until(lambda: cluster.view(TOPIC, via=bystander).isr == (leader,), FAILOVER_BUDGET_S,
               "the ISR to shrink to the leader")
    cluster.kill(leader)
    cluster.restart(follower)
    wait_until(lambda: cluster.view(TOPIC, via=bystander).leader == -1, FAILOVER_BUDGET_S,
               "the partition to go offline")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    partition = TopicPartition(TOPIC, 0)
    assert _elect(admin, ElectionType.PREFERRED, [partition]) == {
        (TOPIC, 0): KafkaError.PREFERRED_LEADER_NOT_AVAILABLE}
    assert _elect(admin, ElectionType.UNCLEAN, [partition]) == {(TOPIC, 0): 0}
    wait_until(lambda: cluster.view(TOPIC, via=bystander).leader == follower, 30,
               "the out-of-sync replica to lead")
    assert cluster.view(TOPIC, via=bystander).isr == (follower,)


def test_a_broker_that_is_not_the_controller_sends_the_client_on(cluster: Cluster) -> None:
    cluster.create_topic(TOPIC, 1, 3)
    client = WireClient(cluster.brokers[1].port, timeout=5)
    try:
        controller = client.request(ApiKey.METADATA, 9, {
            "topics": [], "allow_auto_topic_creation": False})["controller_id"]
    finally:
        client.close()
    other = next(b for b in cluster.live_ids() if b != controller)
    client = WireClient(cluster.brokers[other].port, timeout=5)
    try:
        answer = client.request(ApiKey.ELECT_LEADERS, 2, {
            "election_type": 0, "timeout_ms": 5_000,
            "topic_partitions": [{"topic": TOPIC, "partitions": [0]}]})
        listing = client.request(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {
            "timeout_ms": 5_000, "topics": None})
    finally:
        client.close()
    assert (listing["error_code"], listing["topics"]) == (int(ErrorCode.NOT_CONTROLLER), [])
    assert answer["error_code"] == 0
    assert answer["replica_election_results"] == [{"topic": TOPIC, "partition_result": [
        {"partition_id": 0, "error_code": int(ErrorCode.NOT_CONTROLLER), "error_message": None}]}]
