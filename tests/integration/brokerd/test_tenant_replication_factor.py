"""A managed service decides the replication factor (issue 15, item 10): on a live
two-broker cluster whose default factor is 1, a tenant's CreateTopics through
confluent-kafka's AdminClient gets its plan's factor (2) for -1, POLICY_VIOLATION naming the
allowed factor for anything else, while an operator on the PLAINTEXT listener may still
create a factor-1 topic."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from tenants import znodes
from tenants import zookeeper as control_plane
from tests.integration.brokerd.broker_process import BrokerProcess
from tests.integration.brokerd.tenancy_fixtures import (
    SecureBroker,
    add_api_key,
    confluent_auth,
    grant_tenant_admin,
    start_secure_broker,
    wait_for,
)

pytestmark = pytest.mark.integration
PLAN_FACTOR = 2


@pytest.fixture
def cluster(zk_connect: str, tmp_path: Path) -> Iterator[SecureBroker]:
    first = start_secure_broker(zk_connect, tmp_path, **{"default.replication.factor": "1"})
    second = BrokerProcess(zk_connect, tmp_path / "logs-2", broker_id=2,
                           properties={"zookeeper.session.timeout.ms": "6000"}).start()
    yield first
    for stop in (second.stop, first.stop):
        try:
            stop()
        except Exception:
            pass


def _create(admin: AdminClient, topic: NewTopic) -> KafkaError | None:
    try:
        admin.create_topics([topic], request_timeout=20)[topic.topic].result(timeout=30)
    except KafkaException as exc:
        return exc.args[0]
    return None


def _factor(admin: AdminClient, topic: str) -> int:
    metadata = admin.list_topics(topic, timeout=10).topics[topic]
    return len(metadata.partitions[0].replicas)


def test_tenant_topics_get_the_plans_factor_and_operators_keep_control(
        cluster: SecureBroker, zk: KazooClient) -> None:
    control_plane.put(zk, znodes.tenant_znode("acme"), znodes.tenant_payload(
        name="acme", plan="ha", status="active", quota_defaults={}, max_partitions=100,
        replication_factor=PLAN_FACTOR))
    key = add_api_key(zk, "acme", "app")
    grant_tenant_admin(zk, key, "acme")
    tenant = AdminClient(confluent_auth(cluster, key))
    assert _create(tenant, NewTopic("orders", 2)) is None  # replication factor -1
    assert _factor(tenant, "orders") == PLAN_FACTOR

    refused = _create(tenant, NewTopic("fragile", 1, replication_factor=1))
    assert refused is not None and refused.code() == KafkaError.POLICY_VIOLATION
    assert f"this plan's topics have replication factor {PLAN_FACTOR}" in refused.str()
    assert "fragile" not in tenant.list_topics(timeout=10).topics
    assert _create(tenant, NewTopic("explicit", 1, replication_factor=PLAN_FACTOR)) is None

    # A topic a tenant's producer auto-creates gets the plan's factor too.
    producer = Producer(confluent_auth(cluster, key))
    producer.produce("auto", b"v")
    assert producer.flush(30) == 0
    assert _factor(tenant, "auto") == PLAN_FACTOR

    operator = AdminClient({"bootstrap.servers": cluster.process.bootstrap})
    assert _create(operator, NewTopic("ops-scratch", 1, replication_factor=1)) is None
    assert _factor(operator, "ops-scratch") == 1
    assert wait_for(lambda: _factor(operator, "acme.orders") == PLAN_FACTOR)


def test_without_a_plan_factor_the_cluster_default_is_the_one_allowed(
        cluster: SecureBroker, zk: KazooClient) -> None:
    control_plane.put(zk, znodes.tenant_znode("acme"), znodes.tenant_payload(
        name="acme", plan="basic", status="active", quota_defaults={}, max_partitions=100))
    key = add_api_key(zk, "acme", "app")
    grant_tenant_admin(zk, key, "acme")
    tenant = AdminClient(confluent_auth(cluster, key))
    assert _create(tenant, NewTopic("orders", 1)) is None
    assert _factor(tenant, "orders") == 1
    refused = _create(tenant, NewTopic("wide", 1, replication_factor=2))
    assert refused is not None and refused.code() == KafkaError.POLICY_VIOLATION
    assert "replication factor 1 (request 1 or -1)" in refused.str()
