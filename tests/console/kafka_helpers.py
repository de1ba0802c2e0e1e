"""Real-client helpers for the console's integration and browser tests (confluent-kafka)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)], request_timeout=10)[name].result(15)


def produce(bootstrap: str, topic: str, count: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, value=b"record-%d" % i, partition=i % partitions)
    assert producer.flush(15) == 0


def consume(consumer: Consumer, count: int, timeout: float = 20.0) -> int:
    """Poll until ``count`` records were read, committing synchronously as it goes."""
    read, deadline = 0, time.monotonic() + timeout
    while read < count and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is None or message.error():
            continue
        read += 1
        consumer.commit(message, asynchronous=False)
    return read


def group_consumer(bootstrap: str, group_id: str, topic: str) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group_id,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "client.id": "console-test", "session.timeout.ms": 6000})
    consumer.subscribe([topic])
    return consumer
