"""An operator ends a hanging transaction as ``kafka-transactions.sh abort`` does (KIP-664):
DescribeProducers on the partition finds the producer whose transaction starts at the
stuck offset, and WriteTxnMarkers to the partition's leader writes an abort marker with
that producer's id and epoch.  The last stable offset, which held every read_committed
consumer back, moves on; the aborted record is never read; the producer is described
with no open transaction.  (Tenants are refused, Kafka's ClusterAction:
``tests/unit/brokerd/server/test_tenancy.py``.)"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from brokerd.protocol import ApiKey
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient

pytestmark = pytest.mark.integration
TIMEOUT_S = 30


def described(wire: WireClient, topic: str) -> list[dict[str, Any]]:
    answer = wire.request(ApiKey.DESCRIBE_PRODUCERS, 0, {
        "topics": [{"name": topic, "partition_indexes": [0]}]})
    return list(answer["topics"][0]["partitions"][0]["active_producers"])


def stable_offset(wire: WireClient, topic: str) -> int:
    answer = wire.request(ApiKey.LIST_OFFSETS, 5, {
        "replica_id": -1, "isolation_level": 1, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
    return int(answer["topics"][0]["partitions"][0]["offset"])


def abort(wire: WireClient, version: int, topic: str, producer: dict[str, Any]) -> int:
    """The tool's WriteTxnMarkers: one abort marker, the described producer's fields."""
    marker = {"producer_id": producer["producer_id"], "producer_epoch": producer["producer_epoch"],
              "transaction_result": False, "coordinator_epoch": producer["coordinator_epoch"],
              "topics": [{"name": topic, "partition_indexes": [0]}]}
    if version >= 2:
        marker["transaction_version"] = 0  # (a tool's marker: not a KIP-890 part 2 one)
    answer = wire.request(ApiKey.WRITE_TXN_MARKERS, version, {"markers": [marker]})
    return int(answer["markers"][0]["topics"][0]["partitions"][0]["error_code"])


def committed_values(bootstrap: str, topic: str) -> list[bytes]:
    """Every value a read_committed consumer reads from the start, up to "after"."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        while b"after" not in values:
            message = consumer.poll(TIMEOUT_S)
            assert message is not None, f"read_committed consumer stuck after {values}"
            if message.error() is None:
                values.append(message.value() or b"")
    finally:
        consumer.close()
    return values


@pytest.mark.parametrize("version", [1, 2])
def test_an_operator_aborts_a_hanging_transaction(broker: BrokerProcess, version: int) -> None:
    topic = f"hanging-v{version}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=TIMEOUT_S)
    committed = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    committed.produce(topic, b"before", partition=0)
    assert committed.flush(TIMEOUT_S) == 0
    # A transaction its coordinator will not end for 15 minutes: "hanging" meanwhile.
    hanging = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": topic,
                        "transaction.timeout.ms": 900_000})
    hanging.init_transactions(TIMEOUT_S)
    hanging.begin_transaction()
    hanging.produce(topic, b"hanging", partition=0)
    assert hanging.flush(TIMEOUT_S) == 0
    committed.produce(topic, b"after", partition=0)
    assert committed.flush(TIMEOUT_S) == 0

    wire = WireClient(broker.port, timeout=TIMEOUT_S)
    try:
        assert stable_offset(wire, topic) == 1  # read_committed consumers wait at "hanging"
        [open_transaction] = [p for p in described(wire, topic)
                              if p["current_txn_start_offset"] == 1]
        assert abort(wire, version, topic, open_transaction) == 0
        assert stable_offset(wire, topic) == 4  # before, hanging, after, the marker
        assert [p["current_txn_start_offset"] for p in described(wire, topic)] == [-1, -1]
    finally:
        wire.close()
    assert committed_values(broker.bootstrap, topic) == [b"before", b"after"]
