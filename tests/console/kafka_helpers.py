"""Real-client helpers for the console's integration and browser tests (confluent-kafka)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic


def client_config(bootstrap: str, key: str | None = None, secret: str | None = None
                  ) -> dict[str, str]:
    """PLAINTEXT (the operator listener), or SASL_PLAINTEXT with an API key as SCRAM-SHA-512
    credentials (the settings the console shows, without TLS)."""
    config = {"bootstrap.servers": bootstrap}
    if key is not None:
        assert secret is not None, "an API key needs its secret"
        config.update({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-512",
                       "sasl.username": key, "sasl.password": secret})
    return config


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)], request_timeout=10)[name].result(15)


def produce(config: dict, topic: str, count: int, partitions: int) -> None:
    """Produce ``count`` records round-robin over the partitions; every one must be acked."""
    failures: list[KafkaError] = []

    def delivered(error: KafkaError | None, _message: object) -> None:
        if error is not None:
            failures.append(error)

    producer = Producer({**config, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, value=b"record-%d" % i, partition=i % partitions,
                         on_delivery=delivered)
    assert producer.flush(15) == 0
    assert not failures, failures[:3]


def consume(consumer: Consumer, count: int, timeout: float = 20.0) -> int:
    """Poll until ``count`` records were read, committing synchronously as it goes."""
    read, deadline = 0, time.monotonic() + timeout
    while read < count and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is None or message.error():
            continue
        read += 1
        consumer.commit(message=message, asynchronous=False)
    return read


def group_consumer(config: dict, group_id: str, topic: str) -> Consumer:
    consumer = Consumer({**config, "group.id": group_id, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "client.id": "console-test",
                         "session.timeout.ms": 6000})
    consumer.subscribe([topic])
    return consumer


def visible_topics(config: dict) -> set[str]:
    """Topic names the connection's principal may see (a tenant: without its prefix)."""
    return set(AdminClient(config).list_topics(timeout=5).topics)
