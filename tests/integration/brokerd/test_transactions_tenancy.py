"""Transactions and tenancy on a live broker: transactional ids live in the tenant's
namespace (two tenants may both use ``orders-tx`` and never fence each other), WRITE on
the TransactionalId resource is required to use one, and the transaction APIs show a
tenant only its own transactions, under its own names."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kazoo.client import KazooClient

from brokerd.protocol import ApiKey as Api
from brokerd.protocol import ErrorCode
from tests.integration.brokerd.broker_process import WireClient
from tests.integration.brokerd.tenancy_fixtures import (
    WATCH_PROPAGATION_S,
    ApiKey,
    SecureBroker,
    add_api_key,
    confluent_auth,
    create_topic,
    grant,
    grant_tenant_admin,
    login,
    set_tenant,
    start_secure_broker,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def secure(zk_connect: str, tmp_path: Path) -> Iterator[SecureBroker]:
    broker = start_secure_broker(zk_connect, tmp_path)
    yield broker
    broker.stop()


def _tenant(zk: KazooClient, secure: SecureBroker, slug: str) -> ApiKey:
    set_tenant(zk, slug, max_partitions=20)
    key = add_api_key(zk, slug, "admin")
    grant_tenant_admin(zk, key, slug)
    client = login(secure.sasl_port, key)
    try:
        create_topic(client, "orders")
    finally:
        client.close()
    return key


def _commit(secure: SecureBroker, key: ApiKey, value: bytes, open_after: bool = False
            ) -> Producer:
    producer = Producer({**confluent_auth(secure, key), "transactional.id": "orders-tx"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("orders", value)
    producer.commit_transaction(30)
    if open_after:
        producer.begin_transaction()
        producer.produce("orders", value + b"-open")
        producer.flush(10)
    return producer


def _committed_values(secure: SecureBroker, key: ApiKey) -> list[bytes | None]:
    consumer = Consumer({**confluent_auth(secure, key), "group.id": "reader",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition("orders", 0, 0)])
    try:
        return [m.value() for m in consumer.consume(100, 5) if m.error() is None]
    finally:
        consumer.close()


def _list(client: WireClient) -> list[dict[str, Any]]:
    answer = client.request(Api.LIST_TRANSACTIONS, 0, {"state_filters": [],
                                                      "producer_id_filters": []})
    assert answer["error_code"] == 0
    return answer["transaction_states"]


def test_transactional_ids_are_per_tenant(secure: SecureBroker, zk: KazooClient) -> None:
    acme, globex = _tenant(zk, secure, "acme"), _tenant(zk, secure, "globex")
    acme_producer = _commit(secure, acme, b"acme-1", open_after=True)
    # globex's "orders-tx" is another id: it neither fences nor aborts acme's.
    globex_producer = _commit(secure, globex, b"globex-1")
    acme_producer.commit_transaction(30)
    assert _committed_values(secure, acme) == [b"acme-1", b"acme-1-open"]
    assert _committed_values(secure, globex) == [b"globex-1"]

    operator = WireClient(secure.process.port)
    tenant = login(secure.sasl_port, acme)
    try:
        assert sorted(t["transactional_id"] for t in _list(operator)) == [
            "acme.orders-tx", "globex.orders-tx"]
        assert [t["transactional_id"] for t in _list(tenant)] == ["orders-tx"]
        described = tenant.request(Api.DESCRIBE_TRANSACTIONS, 0, {
            "transactional_ids": ["orders-tx", "globex.orders-tx"]})["transaction_states"]
        ours, theirs = described
        assert (ours["transactional_id"], ours["error_code"]) == ("orders-tx", 0)
        assert ours["transaction_state"] == "CompleteCommit"
        # A tenant's names all map into its own namespace: "globex.orders-tx" is acme's
        # (unused) "acme.globex.orders-tx", never globex's transaction.
        assert theirs["error_code"] == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        assert theirs["producer_id"] == -1
    finally:
        operator.close()
        tenant.close()
        acme_producer.flush(5)
        globex_producer.flush(5)


def test_a_transactional_id_needs_write_permission(secure: SecureBroker,
                                                   zk: KazooClient) -> None:
    _tenant(zk, secure, "acme")
    writer = add_api_key(zk, "acme", "writer")
    grant(zk, writer.principal, "Topic", "acme.", ("All",))
    grant(zk, writer.principal, "TransactionalId", "acme.", ("Describe",))
    time.sleep(WATCH_PROPAGATION_S)
    producer = Producer({**confluent_auth(secure, writer), "transactional.id": "orders-tx"})
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(20)
    assert raised.value.args[0].code() == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
