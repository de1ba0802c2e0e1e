"""KIP-848 groups of tenants on a live SASL broker: a tenant's consumer with
``group.protocol=consumer`` and a regex matching everything is given only its own topics;
its group lives in the tenant's namespace (``acme.<group>`` to operators, ``<group>`` to
the tenant), and another tenant's same-named group is a different group."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from brokerd.protocol import ApiKey as Api
from tests.integration.brokerd.broker_process import WireClient
from tests.integration.brokerd.tenancy_fixtures import (
    ApiKey,
    SecureBroker,
    add_api_key,
    confluent_auth,
    create_topic,
    grant_tenant_admin,
    login,
    set_tenant,
    start_secure_broker,
    wait_for,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def secure(zk_connect: str, tmp_path: Path) -> Iterator[SecureBroker]:
    broker = start_secure_broker(zk_connect, tmp_path, **{
        "group.consumer.heartbeat.interval.ms": "250", "offsets.topic.num.partitions": "4"})
    yield broker
    broker.stop()


def _tenant(zk: KazooClient, slug: str) -> ApiKey:
    set_tenant(zk, slug, max_partitions=20)
    key = add_api_key(zk, slug, "admin")
    grant_tenant_admin(zk, key, slug)
    return key


def _consume_all(secure: SecureBroker, key: ApiKey, group: str, count: int
                 ) -> tuple[dict[str, set[int]], list[str]]:
    """Subscribe by regex to everything, read ``count`` records; (topic -> partitions
    assigned, values read)."""
    from confluent_kafka import Consumer

    consumer = Consumer({**confluent_auth(secure, key), "group.id": group,
                         "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    assigned: dict[str, set[int]] = {}

    def on_assign(_consumer: Any, partitions: list[Any]) -> None:
        for tp in partitions:
            assigned.setdefault(tp.topic, set()).add(tp.partition)

    consumer.subscribe(["^.*"], on_assign=on_assign)
    values: list[str] = []
    deadline = time.monotonic() + 30
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            values.append((message.value() or b"").decode())
    consumer.commit(asynchronous=False)
    consumer.close()
    return assigned, values


def test_tenant_groups_and_regexes_stay_in_the_tenants_namespace(
        secure: SecureBroker, zk: KazooClient) -> None:
    from confluent_kafka import Producer

    acme, globex = _tenant(zk, "acme"), _tenant(zk, "globex")
    for key, topic in ((acme, "orders"), (globex, "payments")):
        client = login(secure.sasl_port, key)
        create_topic(client, topic, 2)
        client.close()
        producer = Producer(confluent_auth(secure, key))
        for i in range(10):
            producer.produce(topic, f"{key.principal}-{i}".encode(), partition=i % 2)
        assert producer.flush(15) == 0

    assigned, values = _consume_all(secure, acme, "workers", 10)
    assert assigned == {"orders": {0, 1}}
    assert sorted(values) == sorted(f"acme.admin-{i}" for i in range(10))
    assigned, values = _consume_all(secure, globex, "workers", 10)
    assert assigned == {"payments": {0, 1}}
    assert sorted(values) == sorted(f"globex.admin-{i}" for i in range(10))

    operator = WireClient(secure.process.port)
    try:
        listed = wait_for(lambda: {g["group_id"]: g["group_type"] for g in operator.request(
            Api.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})["groups"]})
        assert listed == {"acme.workers": "consumer", "globex.workers": "consumer"}
        offsets = operator.request(Api.OFFSET_FETCH, 8, {"require_stable": False, "groups": [
            {"group_id": "acme.workers", "topics": None}]})["groups"][0]["topics"]
        assert [t["name"] for t in offsets] == ["acme.orders"]
    finally:
        operator.close()
    tenant = login(secure.sasl_port, acme)
    try:
        (described,) = tenant.request(Api.CONSUMER_GROUP_DESCRIBE, 1, {
            "group_ids": ["workers"], "include_authorized_operations": False})["groups"]
        assert described["group_id"] == "workers" and described["group_state"] == "Empty"
        mine = tenant.request(Api.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
        assert [g["group_id"] for g in mine["groups"]] == ["workers"]
    finally:
        tenant.close()
