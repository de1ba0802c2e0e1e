"""A clean SIGTERM leaves every segment index consistent, so the next start rebuilds none:
compacted topics (cleaned segments, the offsets topic) and topics with producer timestamps
included (issue 15, item 11)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from brokerd.storage.offset_index import OffsetIndex
from brokerd.storage.time_index import TimeIndex
from tests.integration.brokerd.broker_process import BrokerProcess

pytestmark = pytest.mark.integration


def _inconsistent_indexes(log_dir: Path) -> list[Path]:
    found = []
    for log_file in sorted(log_dir.glob("*/*.log")):
        base = int(log_file.stem)
        for suffix, kind in ((".index", OffsetIndex), (".timeindex", TimeIndex)):
            path = log_file.with_suffix(suffix)
            index = kind(path, base, 10 * 1024 * 1024, preallocate=False)
            if not index.consistent:
                found.append(path)
            index.close()
    return found


def _fill(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    small = {"segment.bytes": "65536"}
    futures = admin.create_topics([
        NewTopic("compacted", 1, 1, config={**small, "cleanup.policy": "compact",
                                            "min.cleanable.dirty.ratio": "0.01",
                                            "min.compaction.lag.ms": "0"}),
        NewTopic("timestamps", 1, 1, config=small)])
    for future in futures.values():
        future.result(30)
    # Batches well below segment.bytes (a larger one is RECORD_LIST_TOO_LARGE).
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 16384})
    failures: list[object] = []

    def delivered(err: object, msg: object) -> None:
        if err is not None:
            failures.append(err)

    base = int(time.time() * 1000) - 3_600_000
    for i in range(10_000):
        producer.produce("compacted", key=b"k%d" % (i % 50), value=b"v" * 60,
                         on_delivery=delivered)
        # out-of-order producer timestamps: the time index keeps only the rising maxima
        producer.produce("timestamps", value=b"t" * 60, timestamp=base + i * 7 % 5000,
                         on_delivery=delivered)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0 and failures == []
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "indexes",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["timestamps"])
    consumed = 0
    deadline = time.monotonic() + 60
    while consumed < 2000 and time.monotonic() < deadline:
        for message in consumer.consume(500, 1.0):
            assert message.error() is None
            consumed += 1
            consumer.commit(message=message, asynchronous=False)
            if consumed >= 2000:
                break
    consumer.close()


def test_clean_sigterm_leaves_indexes_that_the_next_start_does_not_rebuild(
        start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker(log_cleaner_backoff_ms="200")
    _fill(broker.bootstrap)
    time.sleep(2)  # the cleaner's turns over the compacted topic's closed segments
    broker.stop()
    assert broker.process is not None and broker.process.returncode == 0
    assert (broker.log_dir / ".kafka_cleanshutdown").exists()
    listing = {p.name: p.stat().st_size for p in broker.log_dir.glob("compacted-0/*")}
    assert sum(size for name, size in listing.items() if name.endswith(".log")) < 300_000, \
        listing  # ~700 kB produced over 50 keys: the cleaner has run
    assert len(list(broker.log_dir.glob("timestamps-0/*.log"))) > 1
    assert _inconsistent_indexes(broker.log_dir) == []
    broker.start()
    broker.stop()
    assert "rebuilding indexes" not in broker.output()
