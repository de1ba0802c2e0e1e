"""End-to-end latency probe, run as two concurrent processes:
``python -m bench.latency_client consume …`` then ``… produce …``.

The producer sends ``rate`` records per second for ``seconds`` seconds; each payload
starts with the send time (``time.time_ns()`` as a big-endian int64, taken just before
``produce()``) and is padded to ``size`` bytes.  The consumer, already fetching when the
producer starts, computes ``receive time - send time`` per record.  Both processes share
this machine's clock, so the difference is the true end-to-end latency: client queueing
and linger, the produce round trip, the broker's append, and the consumer's next fetch.

Wire protocol between the processes and the orchestrator: the consumer prints ``ready``
once its partition is assigned and its connection is up, then one JSON object at the end.

The producer's ``--acks``, ``--linger-ms`` and ``--idempotence`` default to the original
probe (acks=1, linger.ms=5, no idempotence); the density benchmark sets them to what
mainstream clients now default to (acks=all, idempotence on, linger.ms 0 or 5).
``--nice N`` lowers the producer's CPU priority: on this one machine clients and brokers
share two cores, and at ``linger.ms=0`` librdkafka polls without sleeping while its five
idempotent requests are in flight, so a client spinning at normal priority takes the CPU
the brokers need to answer it; at nice 10 the brokers come first, nearer to clients on
machines of their own.

The producer also reports how many Produce requests it sent (librdkafka's statistics):
once its requests in flight are all taken, librdkafka puts the records that wait into one
request, so under load a rate of records is not a rate of requests.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import time
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from bench.measure import CpuSample, Window, percentile

READY = "ready"
_STAMP = struct.Struct(">q")
# A record stamped 0 only opens the producer's connection; the consumer ignores it.
WARM_UP_STAMP = 0
# How often librdkafka reports its statistics (the Produce request count) to the producer.
STATS_INTERVAL_MS = 200
PRODUCER_CONFIG: dict[str, Any] = {"acks": 1, "linger.ms": 5, "compression.type": "none"}
CONSUMER_CONFIG: dict[str, Any] = {
    "group.id": "bench-latency",
    "enable.auto.commit": False,
    "fetch.wait.max.ms": 100,
    "fetch.min.bytes": 1,
}


def stamped_payload(stamp_ns: int, size: int) -> bytes:
    return _STAMP.pack(stamp_ns).ljust(size, b"x")


def read_stamp(payload: bytes) -> int:
    return int(_STAMP.unpack_from(payload)[0])


def producer_config(acks: str = "1", linger_ms: float = PRODUCER_CONFIG["linger.ms"],
                    idempotence: bool = False
                    ) -> dict[str, Any]:
    """:data:`PRODUCER_CONFIG` with the delivery settings a caller chose; librdkafka
    refuses idempotence unless acks=all, so that mistake fails here, before any process
    has started."""
    if idempotence and acks != "all":
        raise ValueError("idempotence needs acks=all")
    return {**PRODUCER_CONFIG, "acks": acks if acks == "all" else int(acks),
            "linger.ms": linger_ms, "enable.idempotence": idempotence}


class ProduceRequests:
    """librdkafka's own count of the Produce requests it sent, from its statistics."""

    def __init__(self) -> None:
        self.sent: int | None = None
        self.reports = 0

    def on_statistics(self, text: str) -> None:
        brokers = json.loads(text)["brokers"].values()
        self.sent = sum(broker["req"].get("Produce", 0) for broker in brokers)
        self.reports += 1

    def final(self, producer: Producer) -> int | None:
        """The count from a report made after this call (the client is done sending)."""
        seen = self.reports
        deadline = time.perf_counter() + 3 * STATS_INTERVAL_MS / 1000
        while self.reports == seen and time.perf_counter() < deadline:
            producer.poll(STATS_INTERVAL_MS / 4000)
        return self.sent if self.reports > seen else None


class Deliveries:
    """The produce round trip of each record (send to its delivery report), from the
    stamp in its payload: end-to-end latency without the consumer's part."""

    def __init__(self) -> None:
        self.latencies_ms: list[float] = []

    def on_delivery(self, error: Any, message: Any) -> None:
        stamp = read_stamp(message.value())
        if error is None and stamp != WARM_UP_STAMP:
            self.latencies_ms.append((time.time_ns() - stamp) / 1e6)


def produce(bootstrap: str, topic: str, size: int, rate: int, seconds: float,
            broker_pid: int, config: dict[str, Any] | None = None, nice: int = 0,
            delivery_latency: bool = False) -> dict[str, Any]:
    """Send ``rate * seconds`` records at a fixed rate: sleep until the next record is
    due, then send every record due by now (``rate * elapsed``), so a late wake-up
    catches up instead of lowering the rate.  Records are due one at a time, so at
    ``linger.ms=0`` each can be a request of its own (with a fixed 1 ms sleep two were due
    per wake-up at 2,000/s and left together: ~950 requests/s).  ``config`` defaults to
    :func:`producer_config`'s defaults; ``nice`` lowers this process's priority first
    (see the module doc); ``delivery_latency`` adds each record's produce round trip
    (``delivery``: a Python callback per record, so the client costs a little more)."""
    os.nice(nice)
    requests = ProduceRequests()
    deliveries = Deliveries() if delivery_latency else None
    producer = Producer({"bootstrap.servers": bootstrap, **(config or producer_config()),
                         "statistics.interval.ms": STATS_INTERVAL_MS,
                         "stats_cb": requests.on_statistics,
                         **({"on_delivery": deliveries.on_delivery} if deliveries else {})})
    producer.produce(topic, stamped_payload(WARM_UP_STAMP, size), partition=0)
    producer.flush(10)
    total = int(rate * seconds)
    start = CpuSample.take(broker_pid)
    sent = 0
    while sent < total:
        due = min(total, int(rate * (time.perf_counter() - start.wall)))
        while sent < due:
            producer.produce(topic, stamped_payload(time.time_ns(), size), partition=0)
            sent += 1
        producer.poll(0)
        time.sleep(max(start.wall + (sent + 1) / rate - time.perf_counter(), 0))
    unacknowledged = producer.flush(10)
    window = Window.between(start, CpuSample.take(broker_pid))
    requests_sent = requests.final(producer)
    produce_requests = None if requests_sent is None else requests_sent - 1  # the warm-up's
    return {"records": sent - unacknowledged, "records_per_second": round(sent / window.seconds),
            "produce_requests": produce_requests,
            "requests_per_second": (None if produce_requests is None
                                    else round(produce_requests / window.seconds)),
            **({"delivery": summarise(deliveries.latencies_ms)} if deliveries else {}),
            **window.as_dict()}


def consume(bootstrap: str, topic: str, count: int, max_seconds: float) -> dict[str, Any]:
    """Collect the latency of ``count`` stamped records (or as many as arrive in
    ``max_seconds``) and summarise them in milliseconds."""
    consumer = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONFIG})
    partition = TopicPartition(topic, 0, 0)
    consumer.get_watermark_offsets(partition, timeout=10)
    consumer.assign([partition])
    consumer.poll(0.2)  # the first fetch is under way before the producer starts
    print(READY, flush=True)
    latencies_ms: list[float] = []
    deadline = time.perf_counter() + max_seconds
    while len(latencies_ms) < count and time.perf_counter() < deadline:
        # poll() returns as soon as one record is there; consume(n, t) would wait for n
        # records or t seconds and add that wait to every latency.
        message = consumer.poll(0.2)
        received_ns = time.time_ns()
        if message is None or message.error() is not None:
            continue
        value = message.value()
        if value is None:
            continue
        stamp = read_stamp(value)
        if stamp != WARM_UP_STAMP:
            latencies_ms.append((received_ns - stamp) / 1e6)
    consumer.close()
    return summarise(latencies_ms)


def summarise(latencies_ms: list[float]) -> dict[str, Any]:
    if not latencies_ms:
        return {"records": 0}
    ordered = sorted(latencies_ms)
    return {
        "records": len(ordered),
        "p50_ms": round(percentile(ordered, 0.50), 2),
        "p99_ms": round(percentile(ordered, 0.99), 2),
        "max_ms": round(ordered[-1], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.latency_client")
    parser.add_argument("mode", choices=["produce", "consume"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rate", type=int, default=1000, help="records/s (produce)")
    parser.add_argument("--seconds", type=float, default=10.0, help="sending time (produce)")
    parser.add_argument("--count", type=int, default=0, help="records to await (consume)")
    parser.add_argument("--max-seconds", type=float, default=30.0, help="(consume)")
    parser.add_argument("--broker-pid", type=int, default=0, help="(produce)")
    parser.add_argument("--acks", choices=["0", "1", "all"], default="1", help="(produce)")
    parser.add_argument("--linger-ms", type=float, default=PRODUCER_CONFIG["linger.ms"],
                        help="(produce)")
    parser.add_argument("--nice", type=int, default=0,
                        help="lower the CPU priority by this much (produce)")
    parser.add_argument("--idempotence", action="store_true",
                        help="enable.idempotence=true; needs --acks all (produce)")
    parser.add_argument("--delivery-latency", action="store_true",
                        help="report each record's produce round trip (produce)")
    args = parser.parse_args(argv)
    if args.mode == "produce":
        try:
            config = producer_config(args.acks, args.linger_ms, args.idempotence)
        except ValueError as exc:
            parser.error(str(exc))
        result = produce(args.bootstrap, args.topic, args.size, args.rate, args.seconds,
                         args.broker_pid, config, args.nice, args.delivery_latency)
    else:
        result = consume(args.bootstrap, args.topic, args.count, args.max_seconds)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
