"""A numbered-sequence producer and the checks that nothing acknowledged was lost.

The producer is what the issue's durability promise is about: confluent-kafka with
``enable.idempotence`` and ``acks=all``, writing ``<partition>:<n>`` with ``n`` increasing
per partition, remembering which numbers were acknowledged (delivery report without
error).  After the chaos, :func:`read_all` reads every partition back and
:func:`assert_no_loss` checks Kafka's promise: every acknowledged record is present exactly
once, and each partition holds its numbers in order (no duplicates, no reordering)."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

PRODUCER_CONFIG: dict[str, Any] = {
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 5,
    "message.timeout.ms": 120_000,
    "retry.backoff.ms": 100,
    "topic.metadata.refresh.interval.ms": 1_000,
}


class SequenceProducer:
    """Produces ``<partition>:<n>`` to every partition from a background thread."""

    def __init__(self, bootstrap: str, topic: str, partitions: int,
                 rate_per_s: float = 500.0) -> None:
        self.topic = topic
        self.partitions = partitions
        # partition -> (offset, n); offset None: delivered without one (see assert_no_loss)
        self.acked: dict[int, list[tuple[int | None, int]]] = defaultdict(list)
        self.errors: list[str] = []
        self.fatal: list[str] = []
        self._interval = 1.0 / rate_per_s
        self._producer = Producer({"bootstrap.servers": bootstrap,
                                   "error_cb": self._on_error, **PRODUCER_CONFIG})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.sent = 0

    def __enter__(self) -> SequenceProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.fatal.append(str(error))

    def _on_delivery(self, error: KafkaError | None, message: Any) -> None:
        if error is not None:
            self.errors.append(str(error))
            return
        partition, number = message.value().decode().split(":")
        self.acked[int(partition)].append((message.offset(), int(number)))

    def _run(self) -> None:
        number = 0
        while not self._stop.is_set():
            for partition in range(self.partitions):
                self._producer.produce(self.topic, f"{partition}:{number}".encode(),
                                       partition=partition, on_delivery=self._on_delivery)
            self.sent = number + 1
            number += 1
            self._producer.poll(0)
            time.sleep(self._interval)

    def acked_count(self) -> int:
        self._producer.poll(0)
        return sum(len(v) for v in self.acked.values())

    def finish(self, timeout_s: float = 120) -> None:
        """Stop producing and wait until every sent record is acknowledged or failed."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join()
        remaining = self._producer.flush(timeout_s)
        assert remaining == 0, f"{remaining} records neither acknowledged nor failed"


def read_all(bootstrap: str, topic: str, partitions: int, timeout_s: float = 60
             ) -> dict[int, list[tuple[int, int]]]:
    """Every record of every partition, as (offset, n), read up to the high watermarks."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"verify-{topic}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        records: dict[int, list[tuple[int, int]]] = defaultdict(list)
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"read only {dict(records)} in {timeout_s}s"
            message = consumer.poll(0.5)
            if message is None:
                continue
            error, index = message.error(), message.partition()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF and index is not None:
                    at_end.add(index)
                continue
            offset, value = message.offset(), message.value()
            assert index is not None and offset is not None and value is not None, message
            at_end.discard(index)
            partition, number = value.decode().split(":")
            assert int(partition) == index
            records[index].append((offset, int(number)))
        return records
    finally:
        consumer.close()


def assert_no_loss(producer: SequenceProducer, stored: dict[int, list[tuple[int, int]]]
                   ) -> None:
    """Every acknowledged number is stored once, at its acknowledged offset, in order."""
    assert not producer.fatal, producer.fatal
    for partition in range(producer.partitions):
        numbers = [n for _, n in stored.get(partition, [])]
        assert numbers == sorted(set(numbers)), (
            f"partition {partition}: duplicates or reordering in {numbers}")
        at_offset = dict(stored.get(partition, []))
        acked = producer.acked.get(partition, [])
        assert acked, f"partition {partition}: nothing was acknowledged"
        # librdkafka reports a retried batch it knows the broker persisted earlier (a
        # duplicate sequence after a "possibly persisted" failure) as delivered without an
        # offset: such a number must be stored, wherever it is.
        present = set(numbers)
        missing = [(o, n) for o, n in acked
                   if (n not in present if o is None else at_offset.get(o) != n)]
        assert not missing, (f"partition {partition}: acknowledged but lost "
                             f"{describe_missing(missing[:10], stored.get(partition, []))}")


def describe_missing(missing: list[tuple[int | None, int]], stored: list[tuple[int, int]]
                     ) -> list[str]:
    """What a reader found instead of each acknowledged (offset, n): another number at
    that offset (a wrong acknowledgement or a rewritten log), ``n`` at another offset (a
    wrong acknowledged offset), or neither (the reader skipped it, or it is gone), and
    the stored neighbours, so one failed run tells those apart."""
    at_offset = dict(stored)
    offset_of = {n: o for o, n in stored}
    offsets = sorted(at_offset)
    described = []
    for offset, number in missing:
        around = [o for o in offsets if offset is not None and abs(o - offset) <= 3]
        described.append(
            f"{number}@{offset}: stored there "
            f"{None if offset is None else at_offset.get(offset)}, {number} stored at "
            f"{offset_of.get(number)}, neighbours {[(o, at_offset[o]) for o in around]}")
    return described
