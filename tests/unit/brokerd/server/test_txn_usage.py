"""Transaction markers charged like produce: who wrote a producer id's transactional data
(bounded), marker bytes metered as ``bytes_in`` without a produce request, marker bytes
recorded on the writer's produce quota without muting anything, and the broker glue that
bills a marker to its writer, or to the topic's tenant alone when the writer is unknown."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, cast

from brokerd.metering import SequenceBook, TrafficKey, UsageAccumulator
from brokerd.metering.txn_writers import TxnWriter, TxnWriters
from brokerd.protocol.records import build_batch
from brokerd.quota import QuotaType
from brokerd.security import Principal, TenantNamespace
from brokerd.server.metering import BrokerMetering, ProducedBytes
from brokerd.server.quotas import BrokerQuotaGlue
from brokerd.storage.transactions import MARKER_BATCH_BYTES, marker_batch

from .test_quota_glue import FakeClock, FakeConnection

T0 = 1_790_935_200_000
ORDERS = Principal("acme.orders", "acme")


def test_writers_are_remembered_per_producer_and_the_least_recent_forgotten() -> None:
    writers = TxnWriters(max_producers=2)
    writers.wrote(1, TxnWriter(ORDERS, "a"))
    writers.wrote(2, TxnWriter(ORDERS, "b"))
    writers.wrote(1, TxnWriter(ORDERS, "a2"))  # 1 is the most recent again
    writers.wrote(3, TxnWriter(ORDERS, "c"))
    assert writers.writer(2) is None
    assert writers.writer(1) == TxnWriter(ORDERS, "a2")
    assert writers.writer(3) == TxnWriter(ORDERS, "c")


def test_marker_bytes_are_bytes_in_without_a_produce_request() -> None:
    key = TrafficKey("acme", ORDERS.kafka_principal, "app", "orders")
    usage = UsageAccumulator()
    usage.add_produce(key, 1000, T0)
    usage.add_markers(key, MARKER_BATCH_BYTES, T0 + 1)
    [record] = usage.drain(broker_id=1, book=SequenceBook())
    [traffic] = json.loads(record.value)["traffic"]
    assert traffic["bytes_in"] == 1000 + MARKER_BATCH_BYTES
    assert traffic["produce_requests"] == 1


def test_the_marker_size_is_every_markers_stored_size() -> None:
    assert MARKER_BATCH_BYTES == len(marker_batch(2**40, 30_000, False, 2**30, T0))


def test_markers_count_against_the_writers_produce_quota_and_mute_nothing() -> None:
    clock = FakeClock()
    glue = BrokerQuotaGlue(clock=clock)
    glue.tenant_quota_defaults_changed("acme", {"producer_byte_rate": "1000"})
    glue.markers_written(ORDERS, "app", 2_000)  # a burst of markers: 2x the quota
    connection = FakeConnection(ORDERS)
    # The producer's own next request pays for them: (2000 + 1000 - 1000) / 1000 s.
    throttle = glue.produce_throttle(connection, "app", request_bytes=1_000, acks=1,
                                     handler_time_ms=0)
    assert throttle == 2_000 and connection.mutes == [2.0]
    other = FakeConnection(Principal("acme.billing", "acme"))
    assert glue.produce_throttle(other, "app", request_bytes=1_000, acks=1,
                                 handler_time_ms=0) == 0


def _metering() -> tuple[BrokerMetering, BrokerQuotaGlue]:
    quotas = BrokerQuotaGlue(clock=FakeClock())
    broker = SimpleNamespace(quotas=quotas, security=SimpleNamespace(
        max_partitions=lambda tenant: 10 if tenant == "acme" else 0))
    return BrokerMetering(cast(Any, broker), clock=lambda: T0), quotas


def _transactional_produce(producer_id: int) -> tuple[Any, ProducedBytes,
                                                      list[dict[str, Any]]]:
    batch = build_batch([(b"k", b"v", [], T0)], producer_id=producer_id, producer_epoch=0,
                        base_sequence=0, is_transactional=True)
    request = SimpleNamespace(
        connection=SimpleNamespace(principal=ORDERS, namespace=TenantNamespace("acme")),
        header=SimpleNamespace(client_id="app"), body={"transactional_id": "acme.tx"})
    sent = ProducedBytes([[len(batch)]], producer_id)
    answers = [{"name": "acme.orders", "partition_responses": [{"error_code": 0}]}]
    return request, sent, answers


def _traffic(metering: BrokerMetering) -> list[tuple[str, str, str, int, int]]:
    records = metering._usage.drain(broker_id=1, book=SequenceBook())
    return [(entry["principal"], entry["client_id"], entry["topic"], entry["bytes_in"],
             entry["produce_requests"])
            for record in records for entry in json.loads(record.value)["traffic"]]


def test_a_marker_is_billed_to_whoever_sent_its_producers_transactional_data() -> None:
    metering, quotas = _metering()
    request, sent, answers = _transactional_produce(producer_id=42)
    metering.produced(cast(Any, request), sent, cast(Any, answers))
    [[data]] = sent.sizes
    metering.marker_written("acme.orders", 42)
    assert _traffic(metering) == [
        ("User:acme.orders", "app", "orders", data + MARKER_BATCH_BYTES, 1)]
    [produce] = [m for m in quotas.quotas.snapshot(0) if m.quota_type is QuotaType.PRODUCE]
    assert (produce.entity.tenant, produce.entity.client_id) == ("acme", "app")


def test_a_marker_of_an_unknown_producer_is_billed_to_the_topics_tenant_alone() -> None:
    metering, quotas = _metering()
    metering.marker_written("acme.orders", 7)
    metering.marker_written("ops.audit", 7)  # not a tenant this broker knows
    metering.marker_written("__consumer_offsets", 7)
    assert _traffic(metering) == [("", "", "orders", MARKER_BATCH_BYTES, 0)]
    assert quotas.quotas.snapshot(0) == []
