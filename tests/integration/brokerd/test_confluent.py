"""confluent-kafka (librdkafka) against a real broker: keys, headers, timestamps, every
compression codec, idempotent retries, many records."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from tests.integration.brokerd.broker_process import BrokerProcess

pytestmark = pytest.mark.integration


def produce(bootstrap: str, topic: str, count: int, partition: int = 0, **config: object
            ) -> list[int]:
    """Produce ``count`` records (key k<i>, value v<i>, header, timestamp) to one partition;
    return the acknowledged offsets."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    offsets: list[int] = []
    errors: list[object] = []

    def delivered(err: KafkaError | None, msg: Message) -> None:
        offset = msg.offset()
        if err is not None or offset is None:
            errors.append(err or f"delivered without an offset: {msg}")
        else:
            offsets.append(offset)

    for i in range(count):
        producer.produce(topic, partition=partition, key=f"k{i}", value=f"v{i}" * 8,
                         headers=[("n", str(i).encode())], timestamp=1_700_000_000_000 + i,
                         on_delivery=delivered)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(20) == 0
    assert errors == []
    return offsets


def consume(bootstrap: str, topic: str, count: int, timeout: float = 20.0) -> list[Message]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    messages: list[Message] = []
    deadline = time.monotonic() + timeout
    try:
        while len(messages) < count and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.5):
                assert message.error() is None, message.error()
                messages.append(message)
    finally:
        consumer.close()
    return messages


def test_produce_consume_keys_headers_timestamps(broker: BrokerProcess) -> None:
    offsets = produce(broker.bootstrap, "plain", 2000)
    assert sorted(offsets) == list(range(2000))
    messages = consume(broker.bootstrap, "plain", 2000)
    assert [m.offset() for m in messages] == list(range(2000))
    last = messages[-1]
    assert last.key() == b"k1999" and last.value() == b"v1999" * 8
    assert last.headers() == [("n", b"1999")]
    assert last.timestamp() == (1, 1_700_000_001_999)  # (CreateTime, ms)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_every_compression_codec(broker: BrokerProcess, codec: str) -> None:
    produce(broker.bootstrap, f"c-{codec}", 3000, partition=0, **{"compression.type": codec})
    messages = consume(broker.bootstrap, f"c-{codec}", 3000)
    assert len(messages) == 3000
    assert {m.value() for m in messages} == {f"v{i}".encode() * 8 for i in range(3000)}


def test_idempotent_producer_and_100k_records(broker: BrokerProcess) -> None:
    started = time.monotonic()
    offsets = produce(broker.bootstrap, "big", 100_000, partition=0,
                      **{"enable.idempotence": True, "compression.type": "lz4"})
    assert sorted(offsets) == list(range(100_000))
    messages = consume(broker.bootstrap, "big", 100_000)
    assert len(messages) == 100_000
    assert messages[-1].key() == b"k99999"
    assert time.monotonic() - started < 20
