"""Known ``__usage`` records for the tests, in the documented version-1 format."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import DataFrame, SparkSession

from spark.kafka_source import SCHEMA
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


def produce(bootstrap: str, records: list[tuple[str, dict]], partition: int) -> None:
    """Produce (arrival time, record) pairs to ``partition``; the record timestamp is the
    arrival time."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "enable.idempotence": True})
    for arrival, record in records:
        producer.produce(USAGE_TOPIC, key=record["tenant"].encode(),
                         value=json.dumps(record).encode(), partition=partition,
                         timestamp=at(arrival))
    assert producer.flush(15) == 0


def raw_frame(spark: SparkSession, rows: list[tuple[int, int, str, dict | str, bool]]
              ) -> DataFrame:
    """(partition, offset, arrival, record, lookback) -> rows of the kafka_range schema."""
    return spark.createDataFrame(
        [(p, o, at(arrival), b"key",
          (record if isinstance(record, str) else json.dumps(record)).encode(), lookback)
         for p, o, arrival, record, lookback in rows], SCHEMA)
