"""Every client against one broker: 100k records with keys, headers and timestamps, spread over
all four compression codecs, read back identical and in order by the producing client and by a
different one (so each client reads batches another client compressed)."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition

from tests.integration.brokerd.broker_process import BrokerProcess

pytestmark = pytest.mark.integration

CODECS = ["gzip", "snappy", "lz4", "zstd"]
PER_CODEC = 25_000  # 4 codecs x 25k = 100k records per producing client
BASE_TS = 1_700_000_000_000

# (offset, key, value, headers, timestamp) as a client reports them: nullable where its API
# is, headers in the client's own shape; only ever compared with expected_rows().
Row = tuple[int | None, bytes | None, bytes | None, object, int]


def expected_rows() -> list[Row]:
    return [(i, b"k%d" % i, value(i), [("n", b"%d" % i)], BASE_TS + i) for i in range(PER_CODEC)]


def value(i: int) -> bytes:
    return (b"value-%08d-" % i) * 6


def produce_confluent(bootstrap: str, topic: str, codec: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "compression.type": codec,
                         "enable.idempotence": True})
    errors: list[KafkaError] = []

    def delivered(err: KafkaError | None, _message: Message) -> None:
        if err is not None:
            errors.append(err)

    for i in range(PER_CODEC):
        producer.produce(topic, partition=0, key=b"k%d" % i, value=value(i),
                         headers=[("n", b"%d" % i)], timestamp=BASE_TS + i,
                         on_delivery=delivered)
        if i % 5000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0 and errors == []


def produce_kafka_python(bootstrap: str, topic: str, codec: str) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec, linger_ms=5,
                             batch_size=128 * 1024)
    futures = [producer.send(topic, partition=0, key=b"k%d" % i, value=value(i),
                             headers=[("n", b"%d" % i)], timestamp_ms=BASE_TS + i)
               for i in range(PER_CODEC)]
    producer.flush(30)
    assert futures[-1].get(10).offset == PER_CODEC - 1
    producer.close()


def produce_aiokafka(bootstrap: str, topic: str, codec: str) -> None:
    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=codec,
                                    linger_ms=5, max_batch_size=128 * 1024, enable_idempotence=True)
        await producer.start()
        try:
            futures = [await producer.send(topic, partition=0, key=b"k%d" % i, value=value(i),
                                           headers=[("n", b"%d" % i)], timestamp_ms=BASE_TS + i)
                       for i in range(PER_CODEC)]
            assert (await futures[-1]).offset == PER_CODEC - 1
        finally:
            await producer.stop()

    asyncio.run(run())


def read_confluent(bootstrap: str, topic: str) -> list[Row]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "matrix",
                         "enable.auto.commit": False})
    consumer.assign([CkTopicPartition(topic, 0, 0)])
    rows: list[Row] = []
    deadline = time.monotonic() + 60
    try:
        while len(rows) < PER_CODEC and time.monotonic() < deadline:
            for m in consumer.consume(5000, 0.5):
                assert m.error() is None, m.error()
                rows.append((m.offset(), m.key(), m.value(), m.headers() or [], m.timestamp()[1]))
    finally:
        consumer.close()
    return rows


def read_kafka_python(bootstrap: str, topic: str) -> list[Row]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=10_000, max_partition_fetch_bytes=8 << 20)
    partition = KpTopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    rows: list[Row] = [(m.offset, m.key, m.value, list(m.headers), m.timestamp)
                       for _, m in zip(range(PER_CODEC), consumer, strict=False)]
    consumer.close()
    return rows


def read_aiokafka(bootstrap: str, topic: str) -> list[Row]:
    async def run() -> list[Row]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                    max_partition_fetch_bytes=8 << 20)
        await consumer.start()
        try:
            partition = AioTopicPartition(topic, 0)
            consumer.assign([partition])
            await consumer.seek_to_beginning(partition)
            rows: list[Row] = []
            while len(rows) < PER_CODEC:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000, max_records=20_000), 20)
                rows += [(m.offset, m.key, m.value, list(m.headers), m.timestamp)
                         for messages in batch.values() for m in messages]
            return rows
        finally:
            await consumer.stop()

    return asyncio.run(run())


def read_kcat(bootstrap: str, topic: str) -> list[Row]:
    out = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning",
                          "-e", "-q", "-f", "%o\t%k\t%s\t%h\t%T\n"],
                         capture_output=True, timeout=60, check=True).stdout
    rows: list[Row] = []
    for line in out.splitlines():
        offset, key, val, headers, ts = line.split(b"\t")
        name, _, header_value = headers.decode().partition("=")
        rows.append((int(offset), key, val, [(name, header_value.encode())], int(ts)))
    return rows


PRODUCERS: dict[str, Callable[[str, str, str], None]] = {
    "confluent": produce_confluent, "kafka-python": produce_kafka_python, "aiokafka": produce_aiokafka,
}
READERS: dict[str, Callable[[str, str], list[Row]]] = {
    "confluent": read_confluent, "kafka-python": read_kafka_python, "aiokafka": read_aiokafka,
    "kcat": read_kcat,
}
OTHER_READER = {"confluent": "kafka-python", "kafka-python": "aiokafka", "aiokafka": "kcat"}


@pytest.mark.parametrize("client", sorted(PRODUCERS))
def test_100k_records_all_codecs_read_back_identical(broker: BrokerProcess, client: str) -> None:
    for index, codec in enumerate(CODECS):
        topic = f"matrix-{client}-{codec}"
        PRODUCERS[client](broker.bootstrap, topic, codec)
        expected = expected_rows()
        assert READERS[client](broker.bootstrap, topic) == expected, (client, codec)
        other = OTHER_READER[client] if index % 2 == 0 else "confluent"
        assert READERS[other](broker.bootstrap, topic) == expected, (other, codec)


def test_kcat_100k_records_all_codecs(broker: BrokerProcess) -> None:
    """kcat -P can't set per-record timestamps or headers per line: one header, broker-side order."""
    for codec in CODECS:
        topic = f"matrix-kcat-{codec}"
        lines = b"".join(b"k%d\t%s\n" % (i, value(i)) for i in range(PER_CODEC))
        subprocess.run(["kcat", "-b", broker.bootstrap, "-P", "-t", topic, "-p", "0", "-z", codec,
                        "-K", "\t", "-H", "src=kcat"], input=lines, timeout=60, check=True)
        for reader in ("kcat", "confluent"):
            rows = READERS[reader](broker.bootstrap, topic)
            assert [(o, k, v, h) for o, k, v, h, _ in rows] == [
                (i, b"k%d" % i, value(i), [("src", b"kcat")]) for i in range(PER_CODEC)], reader
            timestamps = [ts for *_, ts in rows]
            assert timestamps == sorted(timestamps) and timestamps[0] > BASE_TS
