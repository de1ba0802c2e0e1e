"""Topic nodes holding no assignment, the residue of a deletion that raced the
controller's first leaders before 4edcd97 (the states' recursive create brought the
topic node back, empty), are removed by the controller: found at start-up or appearing
later, and the name can be created, written and read again."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kazoo.client import KazooClient

from brokerd.coordination import znodes
from brokerd.coordination.znodes import PartitionState
from tests.integration.brokerd.broker_process import BrokerProcess
from tests.integration.brokerd.conftest import start_broker

__all__ = ["start_broker"]

GONE_WITHIN_S = 30.0  # a hang guard: removal follows the next read of the topic list


def leave_residue(zk: KazooClient, name: str) -> None:
    """What the old bug left: an empty topic node with a partition's state below it, in
    one transaction (a running controller would remove the empty node between creates)."""
    topic = znodes.topic_path(name)
    transaction = zk.transaction()
    for path in (topic, f"{topic}/partitions", f"{topic}/partitions/0"):
        transaction.create(path, b"")
    transaction.create(znodes.partition_state_path(name, 0), PartitionState(1, 0, (1,)).encode())
    assert all(result is not None and not isinstance(result, Exception)
               for result in transaction.commit())


def await_gone(zk: KazooClient, name: str) -> None:
    deadline = time.monotonic() + GONE_WITHIN_S
    while zk.exists(znodes.topic_path(name)):
        assert time.monotonic() < deadline, f"the empty node of {name} is still there"
        time.sleep(0.1)


def create_write_and_read(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, 1, 1)]).values():
        future.result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(name, b"again", partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "leftovers",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(name, 0, 0)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                assert message.value() == b"again"
                return
        raise AssertionError(f"nothing read back from {name}")
    finally:
        consumer.close()


def test_empty_topic_nodes_are_removed_and_their_names_usable_again(
        zk: KazooClient, start_broker: Callable[..., BrokerProcess]) -> None:
    zk.ensure_path(znodes.TOPICS)
    leave_residue(zk, "before")
    broker = start_broker()
    await_gone(zk, "before")
    leave_residue(zk, "after")
    await_gone(zk, "after")
    for name in ("before", "after"):
        create_write_and_read(broker.bootstrap, name)


def test_a_node_holding_no_readable_assignment_takes_the_name(
        zk: KazooClient, start_broker: Callable[..., BrokerProcess]) -> None:
    """Not empty, so not the old residue: the controller leaves it (it may be another
    writer's), and CreateTopics answers TOPIC_ALREADY_EXISTS, as Kafka does for any node
    there, instead of failing the request."""
    broker = start_broker()
    zk.ensure_path(znodes.TOPICS)
    zk.create(znodes.topic_path("foreign"), b"not an assignment")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    refused = admin.create_topics([NewTopic("foreign", 1, 1)])["foreign"].exception(timeout=30)
    assert refused is not None and refused.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert zk.get(znodes.topic_path("foreign"))[0] == b"not an assignment"
    create_write_and_read(broker.bootstrap, "beside")
