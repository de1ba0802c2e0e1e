"""OffsetCommit of partitions that do not exist: UNKNOWN_TOPIC_OR_PARTITION per partition,
nothing stored, the existing partitions of the same request committed (Kafka's answer),
through confluent-kafka's AdminClient as an operator tool would do it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

from tests.integration.brokerd.broker_process import BrokerProcess
from tests.integration.brokerd.test_groups import create_topic

pytestmark = pytest.mark.integration

GROUP = "reset-tool"


def _alter(admin: AdminClient, partitions: list[TopicPartition]) -> list[TopicPartition]:
    """The per-partition answers (librdkafka reports partition errors in them)."""
    future = admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(GROUP, partitions)], request_timeout=15)[GROUP]
    return list(future.result(timeout=20).topic_partitions)


def test_commits_to_missing_partitions_are_refused_and_not_stored(
        start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker(group_initial_rebalance_delay_ms="0", offsets_topic_num_partitions="3",
                          auto_create_topics_enable="false")
    create_topic(broker.bootstrap, "orders", 2)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    answered = _alter(admin, [TopicPartition("orders", 0, 5), TopicPartition("orders", 7, 5),
                              TopicPartition("no-such-topic", 0, 9)])
    errors = {(tp.topic, tp.partition): tp.error for tp in answered}
    assert errors[("orders", 0)] is None
    for missing in (("orders", 7), ("no-such-topic", 0)):
        error = errors[missing]
        assert error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART, errors

    listed = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(GROUP, [
            TopicPartition("orders", 0), TopicPartition("orders", 7),
            TopicPartition("no-such-topic", 0)])], request_timeout=15)[GROUP].result(timeout=20)
    stored = {(tp.topic, tp.partition): tp.offset for tp in listed.topic_partitions}
    assert stored[("orders", 0)] == 5
    assert stored[("orders", 7)] < 0 and stored[("no-such-topic", 0)] < 0  # nothing stored
