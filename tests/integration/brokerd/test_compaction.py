"""Compacted topics through a real broker: the background cleaner keeps the last value of
every key at its original offset, drops tombstones after delete.retention.ms, and a broker
killed while cleaning restarts with a readable log."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.brokerd.broker_process import BrokerProcess

pytestmark = pytest.mark.integration

KEYS = 1000
UPDATES = 100_000
DELETED = {b"key-%04d" % k for k in range(0, KEYS, 10)}  # every 10th key gets a tombstone
TOPIC = "compacted"
TOPIC_CONFIGS = {
    "cleanup.policy": "compact", "segment.bytes": str(256 * 1024), "segment.ms": "1000",
    "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "2000", "min.compaction.lag.ms": "0",
}
# (offset, key, value or None for a tombstone)
Record = tuple[int, bytes, bytes | None]


def produce_updates(bootstrap: str) -> dict[bytes, Record]:
    """100k updates over 1k keys, then tombstones; returns each key's last record as stored."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "compression.type": "lz4", "enable.idempotence": True,
                         "queue.buffering.max.messages": 500_000})
    latest: dict[bytes, Record] = {}

    def delivered(err: object, msg: object) -> None:
        assert err is None, err
        key = msg.key()  # type: ignore[attr-defined]
        offset = msg.offset()  # type: ignore[attr-defined]
        if key not in latest or latest[key][0] < offset:
            latest[key] = (offset, key, msg.value())  # type: ignore[attr-defined]

    for i in range(UPDATES):
        key = b"key-%04d" % (i % KEYS)
        producer.produce(TOPIC, key=key, value=b"%s=%d" % (key, i), on_delivery=delivered)
        if i % 10_000 == 0:
            producer.poll(0)
    for key in sorted(DELETED):
        producer.produce(TOPIC, key=key, value=None, on_delivery=delivered)
    assert producer.flush(30) == 0
    return latest


def roll_active_segment(bootstrap: str) -> None:
    """segment.ms is 1 s and a roll happens on append: wait, then append one record."""
    time.sleep(1.2)
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(TOPIC, key=b"zz-roll", value=b"roll")
    assert producer.flush(10) == 0


def read_all(bootstrap: str) -> list[Record]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader",
                         "enable.auto.commit": False})
    low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
    consumer.assign([TopicPartition(TOPIC, 0, low)])
    records: list[Record] = []
    deadline = time.monotonic() + 30
    try:
        while (not records or records[-1][0] < high - 1) and time.monotonic() < deadline:
            for m in consumer.consume(10_000, 0.5):
                assert m.error() is None, m.error()
                offset, key = m.offset(), m.key()
                assert offset is not None and key is not None, "a compacted topic's records"
                records.append((offset, key, m.value()))
    finally:
        consumer.close()
    return records


def last_per_key(records: list[Record]) -> dict[bytes, Record]:
    latest: dict[bytes, Record] = {}
    for record in records:
        latest[record[1]] = record
    return latest


def wait_until(check: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.5)


@pytest.fixture
def compacting_broker(start_broker: Callable[..., BrokerProcess]) -> BrokerProcess:
    broker = start_broker(log_cleaner_backoff_ms="200")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1, config=TOPIC_CONFIGS)])[TOPIC].result(10)
    return broker


def test_cleaner_keeps_last_value_per_key_at_original_offsets(compacting_broker: BrokerProcess) -> None:
    bootstrap = compacting_broker.bootstrap
    latest = produce_updates(bootstrap)
    roll_active_segment(bootstrap)
    live = {key: record for key, record in latest.items() if key not in DELETED}

    def compacted() -> bool:
        records = read_all(bootstrap)
        return len(records) == len(live) + 1  # + the record that rolled the segment

    wait_until(compacted, timeout=60)
    records = read_all(bootstrap)
    offsets = [offset for offset, _, _ in records]
    assert offsets == sorted(set(offsets))
    assert records[:-1] == sorted(live.values())
    assert records[-1][1] == b"zz-roll"
    assert not DELETED & {key for _, key, _ in records}


def test_broker_killed_while_cleaning_restarts_readable(compacting_broker: BrokerProcess) -> None:
    bootstrap = compacting_broker.bootstrap
    latest = produce_updates(bootstrap)
    roll_active_segment(bootstrap)
    for delay in (0.05, 0.2, 0.5):
        time.sleep(delay)
        compacting_broker.kill()
        compacting_broker.start()
        records = read_all(bootstrap)
        offsets = [offset for offset, _, _ in records]
        assert offsets == sorted(set(offsets)), "offsets must stay strictly increasing"
        survivors = last_per_key(records)
        for key, record in latest.items():
            if key in DELETED and key not in survivors:
                continue  # its tombstone may already have been removed
            assert survivors[key] == record, key
