"""Load generator for throughput, run as its own process: ``python -m bench.throughput_client
{produce,consume} …``; prints one JSON object on its last stdout line.

It runs apart from the orchestrator so its CPU share (``os.times`` of this process,
librdkafka's threads included) is exactly the load generator's, and it reads the broker's
CPU from /proc at the same two instants (see :mod:`bench.measure`).

Producer settings follow the benchmark's brief: acks=1, linger.ms=5, no compression,
batches up to ~1 MB (under the broker's default max.message.bytes of 1 MiB + 12) and a
local queue big enough that it almost never fills; the Python loop only hands one
pre-built payload to librdkafka in batches (``produce_batch``).  Delivery reports are
requested for failures only, so success costs no Python callback.  Throughput counts
payload (value) bytes only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from bench.measure import CpuSample, Window, megabytes_per_second

PRODUCER_CONFIG: dict[str, Any] = {
    "acks": 1,
    "linger.ms": 5,
    "compression.type": "none",
    "batch.size": 1_000_000,
    "batch.num.messages": 1_000_000,
    "queue.buffering.max.messages": 500_000,
    "queue.buffering.max.kbytes": 1_000_000,
    "delivery.report.only.error": True,
}
CONSUMER_CONFIG: dict[str, Any] = {
    "group.id": "bench-throughput",
    "enable.auto.commit": False,
    "fetch.max.bytes": 64 * 1024 * 1024,
    "max.partition.fetch.bytes": 32 * 1024 * 1024,
    "receive.message.max.bytes": 100 * 1024 * 1024,
    # librdkafka stops prefetching once this many records wait locally (default 100,000,
    # i.e. only 10 MB of 100-byte records, less than one 32 MiB fetch): with the default
    # the consumer sat idle between fetches; 1,000,000 keeps a fetch always under way.
    "queued.min.messages": 1_000_000,
    "queued.max.messages.kbytes": 1024 * 1024,
    "fetch.wait.max.ms": 100,
}
# Records handed to librdkafka per produce_batch() call: one C call per 10,000 records
# halves the client's CPU per record compared with one produce() call each.
PRODUCE_BATCH = 10_000
# The local queue never holds more than this, so a whole batch always fits (queue full
# is then rare, and retried).
QUEUE_LIMIT = PRODUCER_CONFIG["queue.buffering.max.messages"] - 2 * PRODUCE_BATCH
CONSUME_BATCH = 10_000


def enqueue(producer: Producer, topic: str, messages: list[dict[str, Any]],
            partition: int = 0) -> list[str]:
    """Hand every message to ``partition`` through librdkafka; return the errors of
    those it refused for good.

    confluent-kafka marks each refused message with an ``_error`` key and enqueues the
    rest; refusals because the local queue was full are retried after a poll."""
    while len(producer) > QUEUE_LIMIT:
        producer.poll(0.001)
    errors: list[str] = []
    pending = messages
    while producer.produce_batch(topic, pending, partition=partition) < len(pending):
        refused = [m.pop("_error") for m in pending if "_error" in m]
        errors += [str(e) for e in refused if e.code() != KafkaError._QUEUE_FULL]
        retry = sum(1 for e in refused if e.code() == KafkaError._QUEUE_FULL)
        pending = pending[:retry]  # every message carries the same payload
        if not pending:
            break
        producer.poll(0.001)
    return errors


def produce(bootstrap: str, topic: str, size: int, count: int, max_seconds: float,
            broker_pid: int, acks: str = "1", batch_bytes: int | None = None,
            partitions: int = 1) -> dict[str, Any]:
    """Send ``count`` records of ``size`` payload bytes (fewer, in whole batches, if
    ``max_seconds`` runs out) and wait until every one is acknowledged.  Batches of
    :data:`PRODUCE_BATCH` records go to partitions 0 … ``partitions - 1`` in turn.
    ``acks`` overrides the brief's acks=1 (the replication benchmark compares "all");
    ``batch_bytes`` the ~1 MB batches (so requests carry about that many bytes)."""
    failures: list[str] = []

    def on_delivery(err: KafkaError | None, _: Message) -> None:
        if err is not None:
            failures.append(str(err))

    shape = {"batch.size": batch_bytes} if batch_bytes is not None else {}
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG, "acks": acks,
                         **shape, "on_delivery": on_delivery})
    producer.list_topics(topic, timeout=10)  # connected before the window opens
    payload = os.urandom(size)
    batch = [{"value": payload} for _ in range(PRODUCE_BATCH)]
    start = CpuSample.take(broker_pid)
    deadline = start.wall + max_seconds
    sent = batches = 0
    while sent < count and time.perf_counter() < deadline:
        messages = batch[: count - sent]
        refused = enqueue(producer, topic, messages, batches % partitions)
        batches += 1
        failures += refused
        sent += len(messages) - len(refused)
        producer.poll(0)
    unacknowledged = producer.flush(max(30.0, max_seconds))
    end = CpuSample.take(broker_pid)
    window = Window.between(start, end)
    acknowledged = sent - unacknowledged - len(failures)
    return {
        "records": acknowledged,
        "failed": len(failures) + unacknowledged,
        "first_error": failures[0] if failures else None,
        "records_per_second": round(acknowledged / window.seconds),
        "mb_per_second": round(megabytes_per_second(acknowledged * size, window.seconds), 1),
        **window.as_dict(),
    }


def consume(bootstrap: str, topic: str, count: int, max_seconds: float,
            broker_pid: int) -> dict[str, Any]:
    """Read partition 0 from offset 0 (no group membership: ``assign``) until ``count``
    records have arrived or ``max_seconds`` ran out."""
    consumer = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONFIG})
    partition = TopicPartition(topic, 0, 0)
    consumer.get_watermark_offsets(partition, timeout=10)  # connected before the window
    consumer.assign([partition])
    start = CpuSample.take(broker_pid)
    deadline = start.wall + max_seconds
    records = payload_bytes = 0
    first_error = None
    while records < count and time.perf_counter() < deadline:
        for message in consumer.consume(CONSUME_BATCH, 0.5):
            if message.error() is not None:
                first_error = first_error or str(message.error())
                continue
            records += 1
            payload_bytes += len(message)
    end = CpuSample.take(broker_pid)
    consumer.close()
    window = Window.between(start, end)
    return {
        "records": records,
        "first_error": first_error,
        "records_per_second": round(records / window.seconds),
        "mb_per_second": round(megabytes_per_second(payload_bytes, window.seconds), 1),
        **window.as_dict(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.throughput_client")
    parser.add_argument("mode", choices=["produce", "consume"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--size", type=int, default=1024, help="payload bytes (produce)")
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--max-seconds", type=float, required=True)
    parser.add_argument("--broker-pid", type=int, required=True)
    parser.add_argument("--acks", choices=["0", "1", "all"], default="1", help="produce")
    parser.add_argument("--batch-bytes", type=int, default=None, help="produce batch size")
    parser.add_argument("--partitions", type=int, default=1,
                        help="produce to partitions 0 … N-1 in turn")
    args = parser.parse_args(argv)
    if args.mode == "produce":
        result = produce(args.bootstrap, args.topic, args.size, args.count,
                         args.max_seconds, args.broker_pid, args.acks, args.batch_bytes,
                         args.partitions)
    else:
        result = consume(args.bootstrap, args.topic, args.count, args.max_seconds,
                         args.broker_pid)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
