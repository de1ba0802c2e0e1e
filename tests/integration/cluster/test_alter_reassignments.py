"""AlterPartitionReassignments through kafka-python's ``alter_partition_reassignments``
(what ``kafka-reassign-partitions --execute`` and ``--cancel`` send) against three real
brokers: a partition moves with its records; a reassignment in progress is replaced or
cancelled; Kafka's errors for what cannot be done."""

from __future__ import annotations

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import (
    InvalidReplicationAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)

from brokerd.protocol import ApiKey, ErrorCode
from tests.integration.brokerd.broker_process import WireClient
from tests.integration.cluster.harness import SESSION_TIMEOUT_MS, Cluster, produce, wait_until

TOPIC = "moving"
BUDGET_S = SESSION_TIMEOUT_MS / 1000 + 30


def admin_of(cluster: Cluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap)


def controller_of(cluster: Cluster) -> int:
    client = WireClient(cluster.brokers[cluster.live_ids()[0]].port, timeout=5)
    try:
        return client.request(ApiKey.METADATA, 9, {
            "topics": [], "allow_auto_topic_creation": False})["controller_id"]
    finally:
        client.close()


def alter_v1(cluster: Cluster, broker: int, replicas: list[int] | None,
             allow_factor_change: bool) -> dict:
    client = WireClient(cluster.brokers[broker].port, timeout=10)
    try:
        return client.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 1, {
            "timeout_ms": 5_000, "allow_replication_factor_change": allow_factor_change,
            "topics": [{"name": TOPIC, "partitions": [
                {"partition_index": 0, "replicas": replicas}]}]})
    finally:
        client.close()


def test_a_partition_moves_with_its_records_and_bad_requests_get_kafkas_errors(
        cluster: Cluster) -> None:
    cluster.create_topic(TOPIC, 3, 1)
    [source] = cluster.view(TOPIC).replicas
    target = next(b for b in cluster.brokers if b != source)
    assert produce(cluster, source, TOPIC, [b"v%d" % i for i in range(20)], acks=-1)[0] == 0
    written = cluster.replica_batches(source, TOPIC, 0)
    admin = admin_of(cluster)
    try:
        answer = admin.alter_partition_reassignments({
            TopicPartition(TOPIC, 0): [target],
            TopicPartition(TOPIC, 1): [target, target],
            TopicPartition(TOPIC, 2): [target, 99],
            TopicPartition("absent", 0): [target],
        })
        assert answer == {
            TopicPartition(TOPIC, 0): None,
            TopicPartition(TOPIC, 1): InvalidReplicationAssignmentError,
            TopicPartition(TOPIC, 2): InvalidReplicationAssignmentError,
            TopicPartition("absent", 0): UnknownTopicOrPartitionError,
        }
        wait_until(lambda: cluster.view(TOPIC).replicas == (target,), BUDGET_S,
                   "the move to finish")
        assert admin.list_partition_reassignments() == {}
        assert admin.alter_partition_reassignments({TopicPartition(TOPIC, 1): None}) == {
            TopicPartition(TOPIC, 1): NoReassignmentInProgressError}
    finally:
        admin.close()
    wait_until(lambda: cluster.replica_batches(target, TOPIC, 0) == written, BUDGET_S,
               "the moved replica to hold every batch")
    controller = controller_of(cluster)
    # v1 (KIP-860): a size change refused when the request forbids it.
    refused = alter_v1(cluster, controller, [target, source], allow_factor_change=False)
    assert refused["allow_replication_factor_change"] is False
    assert refused["responses"][0]["partitions"][0]["error_code"] == int(
        ErrorCode.INVALID_REPLICATION_FACTOR)
    other = next(b for b in cluster.live_ids() if b != controller)
    elsewhere = alter_v1(cluster, other, [source], allow_factor_change=True)
    assert (elsewhere["error_code"], elsewhere["responses"]) == (
        int(ErrorCode.NOT_CONTROLLER), [])


def test_a_reassignment_in_progress_is_replaced_or_cancelled(cluster: Cluster) -> None:
    """Reassignments started through ``/admin/reassign_partitions`` onto a broker that is
    down stay in progress; a new target replaces one (the dead broker is dropped), null
    cancels the other back to its original replica, and the admin request node, whose
    requests they superseded, is gone."""
    cluster.create_topic(TOPIC, 2, 1)
    sources = [cluster.view(TOPIC, p).replicas[0] for p in (0, 1)]
    dead = next(b for b in cluster.brokers if b not in sources)
    replacement = next(b for b in cluster.brokers if b not in (dead, sources[0]))
    cluster.kill_until_unregistered(dead, BUDGET_S)
    cluster.request_reassignments(TOPIC, {p: [dead] for p in (0, 1)})
    admin = admin_of(cluster)
    try:
        wait_until(lambda: len(admin.list_partition_reassignments()) == 2, BUDGET_S,
                   "both reassignments to be in progress")
        assert admin.alter_partition_reassignments({
            TopicPartition(TOPIC, 0): [replacement],
            TopicPartition(TOPIC, 1): None,
        }) == {TopicPartition(TOPIC, 0): None, TopicPartition(TOPIC, 1): None}
        wait_until(lambda: admin.list_partition_reassignments() == {}, BUDGET_S,
                   "the replaced reassignment to finish")
    finally:
        admin.close()
    assert cluster.view(TOPIC, 0).replicas == (replacement,)
    assert cluster.view(TOPIC, 1).replicas == (sources[1],)
    assert not cluster.request_reassignments(TOPIC, None)
