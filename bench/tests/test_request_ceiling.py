"""The request-rate ceiling's null broker, with a real idempotent librdkafka producer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from bench import request_ceiling


@pytest.fixture
def null_broker() -> Iterator[tuple[int, str]]:
    process, bootstrap = request_ceiling.start_null_broker()
    try:
        yield process.pid, bootstrap
    finally:
        process.kill()
        process.communicate()


def test_an_idempotent_acks_all_producer_is_answered_with_contiguous_offsets(
        null_broker: tuple[int, str]) -> None:
    _, bootstrap = null_broker
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 0})
    delivered: list[tuple[object, int | None]] = []
    for _ in range(500):
        producer.produce("t", b"x" * 1024, partition=0,
                         on_delivery=lambda error, message: delivered.append(
                             (error, message.offset())))
        producer.poll(0)
    assert producer.flush(30) == 0
    assert [error for error, _ in delivered if error is not None] == []
    assert sorted(offset or 0 for _, offset in delivered) == list(range(500))


def test_a_step_reports_what_the_producers_sent_and_the_round_trip(
        null_broker: tuple[int, str]) -> None:
    pid, bootstrap = null_broker
    figures = request_ceiling.step(bootstrap, pid, 400, 1.0, nice=0)
    assert figures["producers"] == 1
    assert figures["records_per_second"] > 0
    assert figures["produce_requests_per_second"] > 0
    assert 0 < figures["p50_ms"] <= figures["p99_ms"] < float("inf")
    assert figures["null_broker_cpu_us_per_request"] > 0
