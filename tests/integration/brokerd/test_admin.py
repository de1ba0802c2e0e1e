"""Admin APIs through confluent-kafka's AdminClient against a real broker."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
)

from brokerd.server.reconciler import SYNC_RECONCILE_MAX
from tests.integration.brokerd.broker_process import BrokerProcess
from tests.integration.brokerd.test_confluent import produce

pytestmark = pytest.mark.integration


def wait(futures: dict) -> dict:
    return {key: future.result(10) for key, future in futures.items()}


def test_create_describe_alter_grow_delete_topic(broker: BrokerProcess, zk: object) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    wait(admin.create_topics([NewTopic("admin-t", 2, 1, config={"retention.ms": "60000"})]))
    with pytest.raises(Exception, match="TOPIC_ALREADY_EXISTS"):
        wait(admin.create_topics([NewTopic("admin-t", 1, 1)]))
    with pytest.raises(Exception, match="INVALID_REPLICATION_FACTOR"):
        wait(admin.create_topics([NewTopic("too-replicated", 1, 3)]))
    topics = admin.list_topics(timeout=5).topics
    assert sorted(topics["admin-t"].partitions) == [0, 1]

    resource = ConfigResource(ConfigResource.Type.TOPIC, "admin-t")
    configs = wait(admin.describe_configs([resource]))[resource]
    assert configs["retention.ms"].value == "60000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["segment.bytes"].is_default

    resource.add_incremental_config(ConfigEntry("cleanup.policy", "compact",
                                                incremental_operation=AlterConfigOpType.SET))
    wait(admin.incremental_alter_configs([resource]))
    deadline = time.monotonic() + 2
    while True:
        described = wait(admin.describe_configs(
            [ConfigResource(ConfigResource.Type.TOPIC, "admin-t")]))
        if next(iter(described.values()))["cleanup.policy"].value == "compact":
            break
        assert time.monotonic() < deadline
    assert b'"cleanup.policy":"compact"' in zk.get("/config/topics/admin-t")[0]  # type: ignore

    wait(admin.create_partitions([NewPartitions("admin-t", 4)]))
    assert sorted(admin.list_topics(timeout=5).topics["admin-t"].partitions) == [0, 1, 2, 3]
    assert produce(broker.bootstrap, "admin-t", 5, partition=3) == list(range(5))

    wait(admin.delete_topics(["admin-t"]))
    assert "admin-t" not in admin.list_topics(timeout=5).topics
    assert not (broker.log_dir / "admin-t-3").exists()


def test_a_topic_deleted_and_created_again_starts_empty(broker: BrokerProcess) -> None:
    """Its partitions' logs go in one batch with the topic; the new topic of the same
    name starts at offset 0 with nothing of the old one in it."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    wait(admin.create_topics([NewTopic("again-t", 8, 1)]))
    for partition in (0, 7):
        assert produce(broker.bootstrap, "again-t", 5, partition=partition) == list(range(5))
    wait(admin.delete_topics(["again-t"]))
    deadline = time.monotonic() + 10
    while any(broker.log_dir.glob("again-t-*")):
        assert time.monotonic() < deadline, sorted(broker.log_dir.glob("again-t-*"))
        time.sleep(0.05)
    wait(admin.create_topics([NewTopic("again-t", 8, 1)]))
    assert produce(broker.bootstrap, "again-t", 3, partition=7) == [0, 1, 2]
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "again"})
    for partition, end in ((0, 0), (7, 3)):
        assert consumer.get_watermark_offsets(
            TopicPartition("again-t", partition), timeout=5) == (0, end)
    consumer.close()


def test_a_large_topic_deleted_and_at_once_created_again_starts_empty(
        broker: BrokerProcess) -> None:
    """Over SYNC_RECONCILE_MAX partitions the old logs are deleted a slice at a time; the
    topic created again meanwhile waits for that, and never serves the old data."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    partitions = SYNC_RECONCILE_MAX * 5
    wait(admin.create_topics([NewTopic("again-large", partitions, 1)]))
    for partition in (0, partitions - 1):
        assert produce(broker.bootstrap, "again-large", 5, partition=partition) == list(range(5))
    wait(admin.delete_topics(["again-large"]))
    wait(admin.create_topics([NewTopic("again-large", partitions, 1)]))
    assert produce(broker.bootstrap, "again-large", 3, partition=partitions - 1) == [0, 1, 2]
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "again-large"})
    for partition, end in ((0, 0), (partitions - 1, 3)):
        assert consumer.get_watermark_offsets(
            TopicPartition("again-large", partition), timeout=5) == (0, end)
    consumer.close()
    assert sum(1 for _ in broker.log_dir.glob("again-large-*[0-9]")) == partitions


def test_describe_cluster_and_delete_records(broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    cluster = admin.describe_cluster().result(10)
    assert cluster.controller.id == 1
    assert [(n.id, n.port) for n in cluster.nodes] == [(1, broker.port)]
    assert cluster.cluster_id

    produce(broker.bootstrap, "trim", 100)
    deleted = admin.delete_records([TopicPartition("trim", 0, 40)])
    result = next(iter(deleted.values())).result(10)
    assert result.low_watermark == 40
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "x"})
    assert consumer.get_watermark_offsets(TopicPartition("trim", 0), timeout=5) == (40, 100)
    consumer.close()
