"""DescribeProducers (KIP-664) against a real broker, after confluent-kafka's producers
wrote: an idempotent producer's epoch, last sequence and timestamp, and a transactional
producer's open transaction, the first offset ``kafka-transactions find-hanging`` looks
for, gone once it commits."""

from __future__ import annotations

from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from brokerd.protocol import ApiKey, ErrorCode
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient

TOPIC = "described"


def _producers(broker: BrokerProcess, partitions: list[int]) -> list[dict[str, Any]]:
    client = WireClient(broker.port, timeout=5)
    try:
        answer = client.request(ApiKey.DESCRIBE_PRODUCERS, 0, {
            "topics": [{"name": TOPIC, "partition_indexes": partitions}]})
    finally:
        client.close()
    [topic] = answer["topics"]
    return list(topic["partitions"])


def test_producers_and_an_open_transaction_are_described(broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=30)
    idempotent = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for i in range(3):
        idempotent.produce(TOPIC, b"v", partition=0, timestamp=1_700_000_000_000 + i)
    assert idempotent.flush(30) == 0
    transactional = Producer({"bootstrap.servers": broker.bootstrap,
                              "transactional.id": "describe-me"})
    transactional.init_transactions(30)
    transactional.begin_transaction()
    transactional.produce(TOPIC, b"t", partition=0)
    assert transactional.flush(30) == 0

    [partition] = _producers(broker, [0])
    assert partition["error_code"] == 0
    first, second = partition["active_producers"]
    assert (first["producer_epoch"], first["last_sequence"], first["last_timestamp"],
            first["current_txn_start_offset"]) == (0, 2, 1_700_000_000_002, -1)
    assert (second["last_sequence"], second["current_txn_start_offset"]) == (0, 3)

    transactional.commit_transaction(30)
    [partition] = _producers(broker, [0])
    assert [p["current_txn_start_offset"] for p in partition["active_producers"]] == [-1, -1]
    [missing] = _producers(broker, [4])
    assert (missing["error_code"], missing["active_producers"]) == (
        int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), [])
