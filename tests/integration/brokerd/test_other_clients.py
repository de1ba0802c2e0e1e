"""kafka-python, aiokafka and kcat against a real broker."""

from __future__ import annotations

import asyncio
import subprocess

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import ConsumerRecord
from aiokafka.structs import TopicPartition as AioTopicPartition
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from tests.integration.brokerd.broker_process import BrokerProcess

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("codec", [None, "gzip"])
def test_kafka_python_idempotent_produce_consume(broker: BrokerProcess, codec: str | None
                                                 ) -> None:
    # kafka-python 3 enables idempotence by default; lz4/snappy/zstd need libraries it
    # does not ship, so librdkafka covers those codecs (test_confluent).
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, compression_type=codec,
                             linger_ms=5)
    futures = [producer.send("kp", key=f"k{i}".encode(), value=f"v{i}".encode(),
                             headers=[("n", str(i).encode())], timestamp_ms=1_700_000_000_000 + i)
               for i in range(3000)]
    producer.flush()
    assert sorted(f.get(5).offset for f in futures) == list(range(3000))
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=5000)
    partition = TopicPartition("kp", 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    messages = [m for _, m in zip(range(3000), consumer, strict=False)]
    assert [m.offset for m in messages] == list(range(3000))
    assert messages[7].key == b"k7" and messages[7].headers == [("n", b"7")]
    assert messages[7].timestamp == 1_700_000_000_007
    # ListOffsets by timestamp lands on the exact record, earliest/latest on the ends.
    found = consumer.offsets_for_times({partition: 1_700_000_000_100})[partition]
    assert (found.offset, found.timestamp) == (100, 1_700_000_000_100)
    assert consumer.end_offsets([partition])[partition] == 3000
    assert consumer.beginning_offsets([partition])[partition] == 0
    consumer.close()


def test_aiokafka_produce_consume(broker: BrokerProcess) -> None:
    async def scenario() -> list[ConsumerRecord[bytes, bytes]]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=True,
                                    compression_type="gzip")
        await producer.start()
        try:
            sent = [await producer.send("ak", key=f"k{i}".encode(), value=f"v{i}".encode(),
                                        headers=[("n", b"x")]) for i in range(2000)]
            offsets = [(await future).offset for future in sent]
            assert offsets == list(range(2000))
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap,
                                    enable_auto_commit=False, auto_offset_reset="earliest")
        await consumer.start()
        try:
            partition = AioTopicPartition("ak", 0)
            consumer.assign([partition])
            await consumer.seek_to_beginning(partition)
            received: list[ConsumerRecord[bytes, bytes]] = []
            while len(received) < 2000:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=500), 10)
                for messages in batch.values():
                    received += messages
            return received
        finally:
            await consumer.stop()

    received = asyncio.run(scenario())
    assert len(received) == 2000
    assert received[5].key == b"k5" and received[5].headers == (("n", b"x"),)


def kcat(broker: BrokerProcess, *args: str, stdin: bytes | None = None) -> str:
    result = subprocess.run(["kcat", "-b", broker.bootstrap, *args], input=stdin,
                            capture_output=True, timeout=30, check=True)
    return result.stdout.decode()


def test_kcat_list_produce_consume(broker: BrokerProcess) -> None:
    lines = "".join(f"key{i}:value{i}\n" for i in range(500)).encode()
    kcat(broker, "-P", "-t", "kc", "-K:", "-H", "source=kcat", stdin=lines)
    listing = kcat(broker, "-L", "-t", "kc")
    assert f"broker 1 at 127.0.0.1:{broker.port}" in listing
    assert 'topic "kc" with 1 partitions' in listing
    assert "partition 0, leader 1, replicas: 1, isrs: 1" in listing
    out = kcat(broker, "-C", "-t", "kc", "-e", "-f", "%k|%s|%o|%h\n")
    records = out.splitlines()
    assert len(records) == 500
    assert records[0] == "key0|value0|0|source=kcat"
    assert records[-1] == "key499|value499|499|source=kcat"


def test_kafka_python_100k_records(broker: BrokerProcess) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5,
                             batch_size=256 * 1024)
    futures = [producer.send("kp-big", key=b"k%d" % i, value=b"v%d" % i)
               for i in range(100_000)]
    producer.flush()
    assert futures[-1].get(5).offset == 99_999
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=5000, max_partition_fetch_bytes=10 << 20)
    partition = TopicPartition("kp-big", 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    offsets = [m.offset for _, m in zip(range(100_000), consumer, strict=False)]
    consumer.close()
    assert offsets == list(range(100_000))


def test_aiokafka_100k_records(broker: BrokerProcess) -> None:
    async def scenario() -> list[int]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5,
                                    max_batch_size=256 * 1024)
        await producer.start()
        try:
            futures = [await producer.send("ak-big", value=b"v%d" % i) for i in range(100_000)]
            assert (await futures[-1]).offset == 99_999
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap,
                                    enable_auto_commit=False, max_partition_fetch_bytes=10 << 20)
        await consumer.start()
        try:
            partition = AioTopicPartition("ak-big", 0)
            consumer.assign([partition])
            await consumer.seek_to_beginning(partition)
            offsets: list[int] = []
            while len(offsets) < 100_000:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000,
                                                                max_records=50_000), 10)
                offsets += [m.offset for messages in batch.values() for m in messages]
            return offsets
        finally:
            await consumer.stop()

    assert asyncio.run(scenario()) == list(range(100_000))
