"""ListPartitionReassignments through kafka-python's ``list_partition_reassignments``
(what ``kafka-reassign-partitions --list`` and rebalancing tools ask) against three real
brokers: a reassignment whose new replica is down stays in progress and is listed in
Kafka's terms until that replica comes back and catches up."""

from __future__ import annotations

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient

from tests.integration.cluster.harness import SESSION_TIMEOUT_MS, Cluster, wait_until

TOPIC = "moving"
BUDGET_S = SESSION_TIMEOUT_MS / 1000 + 30


def test_a_reassignment_is_listed_while_in_progress(cluster: Cluster) -> None:
    cluster.create_topic(TOPIC, 1, 1)
    [source] = cluster.view(TOPIC).replicas
    target = next(b for b in cluster.brokers if b != source)
    bystander = next(b for b in cluster.brokers if b not in (source, target))
    cluster.kill_until_unregistered(target, BUDGET_S)
    cluster.request_reassignments(TOPIC, {0: [target]})
    admin = KafkaAdminClient(bootstrap_servers=",".join(
        cluster.brokers[b].bootstrap for b in (source, bystander)))
    try:
        ongoing = {TopicPartition(TOPIC, 0): {"replicas": [target, source],
                                              "adding_replicas": [target],
                                              "removing_replicas": [source]}}
        wait_until(lambda: admin.list_partition_reassignments() == ongoing, BUDGET_S,
                   "the reassignment to be listed")
        assert admin.list_partition_reassignments({TOPIC: [0, 3]}) == ongoing
        assert admin.list_partition_reassignments({"elsewhere": [0]}) == {}
        cluster.restart(target)
        wait_until(lambda: admin.list_partition_reassignments() == {}, BUDGET_S,
                   "the reassignment to finish")
    finally:
        admin.close()
    wait_until(lambda: cluster.view(TOPIC, via=bystander).replicas == (target,), 30,
               "the new assignment")
