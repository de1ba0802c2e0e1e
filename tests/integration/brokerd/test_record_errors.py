"""Produce v8+ per-record errors (KIP-467) on a real broker: a confluent-kafka producer's
batch with some invalid records fails those records with the broker's error and the rest
with librdkafka's _INVALID_DIFFERENT_RECORD, and nothing of the batch is stored; the wire
answer names the bad records' indexes with Kafka's messages."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from brokerd.protocol import ApiKey, ErrorCode
from brokerd.protocol.records import build_batch
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient

pytestmark = pytest.mark.integration
HOUR_MS = 3_600_000


def _create(bootstrap: str, name: str, **config: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config=config)])[name].result(timeout=20)


def _produce_one_batch(bootstrap: str, topic: str, records: list[tuple[bytes | None, int]]
                       ) -> list[int]:
    """Produce ``(key, timestamp_ms)`` records as one batch; each record's error code."""
    outcome: dict[int, int] = {}
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1000,
                         "message.timeout.ms": 20000})
    # Connection and metadata first, so the records below wait out the linger together and
    # travel as one batch (on a loaded machine they were otherwise seen split).
    producer.list_topics(topic, timeout=10)

    def delivered(index: int):  # type: ignore[no-untyped-def]
        def report(err: KafkaError | None, msg: object) -> None:
            outcome[index] = err.code() if err is not None else 0
        return report

    for index, (key, timestamp) in enumerate(records):
        producer.produce(topic, value=f"v{index}".encode(), key=key, partition=0,
                         timestamp=timestamp, on_delivery=delivered(index))
    assert producer.flush(30) == 0
    return [outcome[index] for index in range(len(records))]


def _end_offset(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        consumer.close()


def test_keyless_records_in_a_compacted_topic_fail_alone(broker: BrokerProcess) -> None:
    _create(broker.bootstrap, "compacted", **{"cleanup.policy": "compact"})
    now = int(time.time() * 1000)
    codes = _produce_one_batch(broker.bootstrap, "compacted",
                               [(b"a", now), (None, now), (b"c", now), (None, now)])
    different = KafkaError._INVALID_DIFFERENT_RECORD
    assert codes == [different, KafkaError.INVALID_RECORD, different, KafkaError.INVALID_RECORD]
    assert _end_offset(broker.bootstrap, "compacted") == 0  # the batch was refused whole
    assert _produce_one_batch(broker.bootstrap, "compacted", [(b"a", now)]) == [0]


def test_records_outside_the_timestamp_window_fail_alone(broker: BrokerProcess) -> None:
    _create(broker.bootstrap, "timed", **{"message.timestamp.type": "CreateTime",
                                           "message.timestamp.before.max.ms": str(HOUR_MS),
                                           "message.timestamp.after.max.ms": str(HOUR_MS)})
    now = int(time.time() * 1000)
    codes = _produce_one_batch(broker.bootstrap, "timed", [
        (b"a", now - 2 * HOUR_MS), (b"b", now), (b"c", now + 2 * HOUR_MS), (b"d", now)])
    # librdkafka fails each record the broker names with INVALID_RECORD, whatever the
    # partition's code (INVALID_TIMESTAMP here, see the wire test below).
    different, invalid = KafkaError._INVALID_DIFFERENT_RECORD, KafkaError.INVALID_RECORD
    assert codes == [invalid, different, invalid, different]
    assert _end_offset(broker.bootstrap, "timed") == 0


def test_the_wire_answer_names_each_record_with_kafkas_messages(broker: BrokerProcess) -> None:
    _create(broker.bootstrap, "wire-compacted", **{"cleanup.policy": "compact"})
    client = WireClient(broker.port)
    now = int(time.time() * 1000)
    records = build_batch([(b"k", b"v", [], now), (None, b"v", [], now), (None, b"v", [], now)])
    body = {"acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": "wire-compacted", "partition_data": [{"index": 0, "records": records}]}]}
    [answer] = client.request(ApiKey.PRODUCE, 9, body)["responses"][0]["partition_responses"]
    assert answer["error_code"] == ErrorCode.INVALID_RECORD
    assert [(e["batch_index"], e["batch_index_error_message"]) for e in answer["record_errors"]] == [
        (1, "Compacted topic cannot accept message without key."),
        (2, "Compacted topic cannot accept message without key.")]
    assert answer["error_message"].startswith("One or more records have been rejected due to 2 "
                                              "record errors in total")
    # Produce v7 has no record_errors: the same refusal, the partition error alone.
    [old] = client.request(ApiKey.PRODUCE, 7, body)["responses"][0]["partition_responses"]
    assert old["error_code"] == ErrorCode.INVALID_RECORD
    # A timestamp outside the window: INVALID_TIMESTAMP, the record and the window named.
    _create(broker.bootstrap, "wire-timed", **{"message.timestamp.before.max.ms": str(HOUR_MS)})
    stale = now - 2 * HOUR_MS
    body["topic_data"] = [{"name": "wire-timed", "partition_data": [{"index": 0, "records":
                           build_batch([(b"k", b"v", [], stale), (b"k", b"v", [], now)])}]}]
    [timed] = client.request(ApiKey.PRODUCE, 9, body)["responses"][0]["partition_responses"]
    assert timed["error_code"] == ErrorCode.INVALID_TIMESTAMP
    assert timed["error_message"] == "One or more records have been rejected due to invalid timestamp"
    [(index, message)] = [(e["batch_index"], e["batch_index_error_message"])
                          for e in timed["record_errors"]]
    assert index == 0 and message.startswith(
        f"Timestamp {stale} of message with offset 0 is out of range. The timestamp should be "
        "within [")
    client.close()
