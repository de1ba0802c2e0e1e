"""Known ``__usage`` records for the tests, in the documented version-1 format."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from spark.usage import USAGE_TOPIC, epoch_ms


def at(text: str) -> int:
    """Epoch milliseconds of a UTC time written ``2026-10-05T13:42``."""
    return epoch_ms(datetime.fromisoformat(text).replace(tzinfo=UTC))


def usage_record(tenant: str, broker_id: int, window: str, sequence: int = 0,
                 traffic: list[dict] | None = None,
                 storage: list[dict] | None = None) -> dict:
    return {"version": 1, "broker_id": broker_id, "window_start": at(window),
            "sequence": sequence, "tenant": tenant, "traffic": traffic or [],
            "storage": storage or []}


def traffic(topic: str, bytes_in: int = 0, bytes_out: int = 0, produce: int = 0,
            fetch: int = 0, principal: str = "User:app", client_id: str = "app") -> dict:
    return {"principal": principal, "client_id": client_id, "topic": topic,
            "bytes_in": bytes_in, "bytes_out": bytes_out, "produce_requests": produce,
            "fetch_requests": fetch}


def storage(topic: str, partition: int, hour: str, stored_bytes: int) -> dict:
    return {"topic": topic, "partition": partition, "hour_start": at(hour),
            "stored_bytes": stored_bytes}


def create_usage_topic(bootstrap: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(USAGE_TOPIC, partitions, 1)], operation_timeout=10)
    futures[USAGE_TOPIC].result(timeout=15)


def produce(bootstrap: str, records: list[tuple[str, dict]], partition: int | None = None) -> None:
    """Produce (arrival time, record) pairs; the record timestamp is the arrival time."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "enable.idempotence": True})
    extra = {} if partition is None else {"partition": partition}
    for arrival, record in records:
        producer.produce(USAGE_TOPIC, key=record["tenant"].encode(),
                         value=json.dumps(record).encode(), timestamp=at(arrival), **extra)
    assert producer.flush(15) == 0
