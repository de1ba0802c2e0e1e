"""Kafka 4.0's protocol floor (KIP-896) against a real broker: a request below it gets
UNSUPPORTED_VERSION in its own version's response and the connection stays usable; the
Produce v0-2 advertisement keeps librdkafka compressing; Metadata v0 is still served."""

from __future__ import annotations

import logging
import urllib.request

import confluent_kafka
import pytest
from kafka import KafkaProducer
from kafka.errors import UnsupportedVersionError

from brokerd.protocol import ApiKey, ErrorCode
from brokerd.protocol.records import build_batch
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient
from tests.integration.brokerd.test_wire import create_topic

pytestmark = pytest.mark.integration


def test_requests_below_the_floor_get_error_35_and_the_connection_survives(
        broker: BrokerProcess) -> None:
    client = WireClient(broker.port)
    create_topic(client, "floor")
    records = build_batch([(None, b"v", [], 1_700_000_000_000)])
    old_produce = client.request(ApiKey.PRODUCE, 2, {"acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": "floor", "partition_data": [{"index": 0, "records": records}]}]})
    [partition] = old_produce["responses"][0]["partition_responses"]
    assert partition["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    old_commit = client.request(ApiKey.OFFSET_COMMIT, 1, {
        "group_id": "g", "member_id": "", "topics": [{"name": "floor", "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_metadata": None}]}]})
    assert old_commit["topics"][0]["partitions"][0]["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    old_create = client.request(ApiKey.CREATE_TOPICS, 0, {"topics": [
        {"name": "never", "num_partitions": 1, "replication_factor": 1, "assignments": [],
         "configs": []}], "timeout_ms": 1000})
    assert old_create["topics"][0]["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    # Nothing was stored or created, and the same connection goes on at served versions.
    metadata = client.request(ApiKey.METADATA, 0, {"topics": []})  # v0: [] is every topic
    assert {t["name"] for t in metadata["topics"]} == {"floor"}
    assert metadata["topics"][0]["partitions"][0]["leader_id"] == 1
    listed = client.request(ApiKey.LIST_OFFSETS, 1, {"replica_id": -1, "topics": [
        {"name": "floor", "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    assert listed["topics"][0]["partitions"][0]["offset"] == 0
    client.close()


def test_kafka_python_pinned_to_kafka_0_10_is_refused_with_unsupported_version(
        broker: BrokerProcess) -> None:
    """kafka-python told the broker is 0.10 sends Produce v2, below the floor."""
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, api_version=(0, 10, 1),
                             retries=0, request_timeout_ms=5000)
    try:
        with pytest.raises(UnsupportedVersionError):
            producer.send("floor-kp", b"v").get(timeout=20)
    finally:
        producer.close(timeout=5)
    # The broker answered it (the request reached it at v2; the client did not give up).
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/metrics",
                                     timeout=5).read().decode()
    assert 'kafka_network_requests_total{api="produce",version="2"}' in metrics


def test_librdkafka_still_compresses_with_produce_v0_advertised(broker: BrokerProcess) -> None:
    messages: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    logger = logging.getLogger("floor.librdkafka")
    logger.addHandler(Capture())
    logger.setLevel(logging.DEBUG)
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap,
                                         "compression.type": "gzip", "debug": "msg"},
                                        logger=logger)
    for _ in range(10):
        producer.produce("floor-gzip", b"x" * 1000)
    assert producer.flush(20) == 0
    sent = [m for m in messages if "Produce MessageSet" in m]
    assert sent and all("gzip" in m for m in sent), sent
    assert not any("does not support compression" in m for m in messages)
