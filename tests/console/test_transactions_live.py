"""Open transactions and the operator's abort against a real broker and a confluent-kafka
transactional producer left open."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import IsolationLevel, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from django.test import Client

from dashboard import kafka, snapshots
from tenants.models import AuditEvent, Tenant

from .kafka_helpers import client_config, create_topic

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def _stable_offsets(bootstrap: str) -> list[int]:
    """ListOffsets latest with isolation_level=read_committed: each partition's LSO."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = {TopicPartition("acme.orders", p): OffsetSpec.latest() for p in (0, 1)}
    answers = admin.list_offsets(request, isolation_level=IsolationLevel.READ_COMMITTED,
                                 request_timeout=10)
    return [answers[tp].result(15).offset for tp in sorted(answers, key=lambda tp: tp.partition)]


def _listed(client: Client) -> list[dict]:
    response = client.get("/api/v1/tenants/acme/transactions/")
    assert response.status_code == 200, response.content
    assert response.json()["errors"] == []
    return response.json()["transactions"]


def _group_lags(client: Client) -> list[tuple[int, int, int]]:
    """A snapshot, then the group's partitions in the REST API: (lag, last stable offset,
    read_committed lag)."""
    snapshots.snapshot_all()
    group = client.get("/api/v1/tenants/acme/consumer-groups/billing/").json()
    return [(p["lag"], p["last_stable"], p["read_committed_lag"]) for p in group["partitions"]]


def test_open_transaction_is_listed_and_aborted_by_an_operator(
        kafka_broker, acme: Tenant, operator_client: Client) -> None:  # type: ignore[no-untyped-def]
    bootstrap = kafka_broker.bootstrap
    create_topic(bootstrap, "acme.orders", 2)
    kafka.alter_offsets(kafka.admin_client(), "acme.billing", {("acme.orders", 0): 0,
                                                               ("acme.orders", 1): 0})
    producer = Producer({**client_config(bootstrap), "transactional.id": "acme.orders-tx",
                         "transaction.timeout.ms": 120000})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(6):
        producer.produce("acme.orders", value=b"%d" % i, partition=i % 2)
    assert producer.flush(15) == 0
    deadline = time.monotonic() + 20
    while not (listed := _listed(operator_client)) and time.monotonic() < deadline:
        time.sleep(0.3)
    (txn,) = listed
    assert (txn["transactional_id"], txn["state"], txn["partitions"], txn["timeout_ms"]) == (
        "orders-tx", "Ongoing", [["orders", 0], ["orders", 1]], 120000)
    assert txn["age_s"] is not None and not txn["hanging"]
    assert _stable_offsets(bootstrap) == [0, 0]  # the open transaction holds the LSO
    assert _group_lags(operator_client) == [(3, 0, 0), (3, 0, 0)]  # (lag, LSO, read_committed)
    page = operator_client.get("/t/acme/consumer-groups/billing/").content.decode()
    assert page.count('<td data-field="read_committed_lag">0</td>') == 2

    response = operator_client.post(
        "/api/v1/tenants/acme/transactions/orders-tx/abort/",
        {"producer_id": txn["producer_id"], "producer_epoch": txn["producer_epoch"]},
        content_type="application/json")
    assert response.status_code == 202, response.content
    deadline = time.monotonic() + 30
    while _listed(operator_client) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert _listed(operator_client) == []
    event = AuditEvent.objects.get(action="transaction.abort")
    assert event.target == "acme.orders-tx" and event.details["producer_id"] == txn["producer_id"]
    # markers written: the LSO moved past the aborted records and the abort marker
    deadline = time.monotonic() + 20
    while _stable_offsets(bootstrap) != [4, 4] and time.monotonic() < deadline:
        time.sleep(0.3)
    assert _stable_offsets(bootstrap) == [4, 4]
    assert _group_lags(operator_client) == [(4, 4, 4), (4, 4, 4)]
    with pytest.raises(KafkaException):  # the hanging producer was fenced
        producer.commit_transaction(15)
