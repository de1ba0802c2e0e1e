"""Fetch sessions (KIP-227) on a real broker: kafka-python's consumer reading through
incremental fetches, the session errors 70/71 in raw requests, and eviction from a full
cache (a follower's session outranks a consumer's; an idle one gives way to anyone)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition

from brokerd.protocol import ApiKey, ErrorCode
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient
from tests.integration.brokerd.test_confluent import produce

pytestmark = pytest.mark.integration

TOPIC = "sessions"


def fetch(broker: BrokerProcess, session_id: int, epoch: int, partitions: list[int],
          replica_id: int = -1) -> dict[str, Any]:
    client = WireClient(broker.port)
    try:
        return client.request(ApiKey.FETCH, 12, {
            "replica_id": replica_id, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": session_id, "session_epoch": epoch,
            "rack_id": "", "forgotten_topics_data": [],
            "topics": [{"topic": TOPIC, "partitions": [
                {"partition": index, "current_leader_epoch": -1, "fetch_offset": 0,
                 "last_fetched_epoch": -1, "log_start_offset": -1,
                 "partition_max_bytes": 1 << 20} for index in partitions]}]
            if partitions else []})
    finally:
        client.close()


def answered(response: dict[str, Any]) -> list[int]:
    return sorted(p["partition_index"] for t in response["responses"] for p in t["partitions"])


def create_topic(broker: BrokerProcess, partitions: int) -> None:
    client = WireClient(broker.port)
    try:
        body = client.request(ApiKey.CREATE_TOPICS, 5, {"topics": [
            {"name": TOPIC, "num_partitions": partitions, "replication_factor": 1}],
            "timeout_ms": 10_000})
    finally:
        client.close()
    assert body["topics"][0]["error_code"] == 0, body


def test_kafka_python_consumes_through_incremental_fetches(
        start_broker: Callable[..., BrokerProcess], caplog: pytest.LogCaptureFixture) -> None:
    broker = start_broker()
    create_topic(broker, 4)
    for partition in range(4):
        produce(broker.bootstrap, TOPIC, 50, partition=partition)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, fetch_max_wait_ms=50,
                             consumer_timeout_ms=10_000)
    try:
        consumer.assign([TopicPartition(TOPIC, p) for p in range(4)])
        received = 0
        deadline = time.monotonic() + 20
        while received < 200 and time.monotonic() < deadline:
            received += sum(len(batch) for batch in consumer.poll(500).values())
        for _ in range(10):  # idle rounds: incremental fetches naming nothing
            consumer.poll(100)
        # kafka-python's KIP-227 state: the epoch of its next incremental request.
        metadata = [(handler.next_metadata.session_id, handler.next_metadata.epoch)
                    for handler in consumer._fetcher._session_handlers.values()]
    finally:
        consumer.close()
    assert received == 200
    assert metadata and all(session_id != 0 and epoch > 2 for session_id, epoch in metadata)
    complaints = [r.getMessage() for r in caplog.records if "invalid" in r.getMessage()
                  or "unable to process" in r.getMessage()]
    assert complaints == []


def test_session_errors_answer_70_and_71(start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker()
    create_topic(broker, 2)
    full = fetch(broker, 0, 0, [0, 1])
    session_id = full["session_id"]
    assert (full["error_code"], answered(full)) == (0, [0, 1]) and session_id != 0
    incremental = fetch(broker, session_id, 1, [])
    assert (incremental["error_code"], incremental["session_id"]) == (0, session_id)
    assert answered(incremental) == []  # nothing changed
    for session, epoch, error in ((session_id, 1, ErrorCode.INVALID_FETCH_SESSION_EPOCH),
                                  (session_id + 1, 2, ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
                                  (0, 5, ErrorCode.INVALID_FETCH_SESSION_EPOCH)):
        response = fetch(broker, session, epoch, [])
        assert (response["error_code"], response["session_id"], response["responses"]) == (
            error, 0, [])
    assert fetch(broker, session_id, 2, [])["error_code"] == 0  # the session is intact


def test_a_full_cache_evicts_by_kafkas_rules(start_broker: Callable[..., BrokerProcess]
                                            ) -> None:
    broker = start_broker(max_incremental_fetch_session_cache_slots="1",
                          min_incremental_fetch_session_eviction_ms="1000")
    create_topic(broker, 2)
    first = fetch(broker, 0, 0, [0, 1])["session_id"]
    assert first != 0
    refused = fetch(broker, 0, 0, [0, 1])  # a consumer cannot evict a fresh session
    assert refused["session_id"] == 0 and answered(refused) == [0, 1]
    follower = fetch(broker, 0, 0, [0], replica_id=2)["session_id"]  # privileged: evicts
    assert follower not in (0, first)
    assert fetch(broker, first, 1, [])["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert fetch(broker, 0, 0, [0, 1])["session_id"] == 0  # followers' are safe when fresh
    time.sleep(1.5)  # the follower's session idles past the eviction time
    consumer = fetch(broker, 0, 0, [0, 1])["session_id"]
    assert consumer not in (0, first, follower)
    assert fetch(broker, follower, 1, [], replica_id=2)["error_code"] == (
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
