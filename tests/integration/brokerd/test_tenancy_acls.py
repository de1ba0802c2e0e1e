"""ACL enforcement and plan limits on a live broker: a principal holding only some rights
gets the protocol's authorization errors for the rest, Metadata omits what it may not
Describe, a new grant (ACL znode + change notification) applies without restart, and topic
creation stops at the tenant plan's partition allowance with POLICY_VIOLATION."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from brokerd.protocol import ApiKey as Api
from brokerd.protocol import ErrorCode
from brokerd.protocol.records import build_batch
from tests.integration.brokerd.broker_process import WireClient
from tests.integration.brokerd.tenancy_fixtures import (
    SecureBroker,
    add_api_key,
    create_topic,
    grant,
    grant_tenant_admin,
    login,
    set_tenant,
    start_secure_broker,
    wait_for,
)


@pytest.fixture
def secure(zk_connect: str, tmp_path: Path) -> Iterator[SecureBroker]:
    broker = start_secure_broker(zk_connect, tmp_path)
    yield broker
    broker.stop()


def _create(client: WireClient, name: str, partitions: int = 1) -> dict:
    return client.request(Api.CREATE_TOPICS, 7, {"timeout_ms": 15000, "topics": [
        {"name": name, "num_partitions": partitions, "replication_factor": 1}]})["topics"][0]


def _produce(client: WireClient, name: str) -> int:
    records = build_batch([(None, b"v", [], 1_700_000_000_000)])
    answer = client.request(Api.PRODUCE, 9, {"acks": 1, "timeout_ms": 2000, "topic_data": [
        {"name": name, "partition_data": [{"index": 0, "records": records}]}]})
    return int(answer["responses"][0]["partition_responses"][0]["error_code"])


def test_each_denied_request_gets_its_authorization_error(secure: SecureBroker,
                                                          zk: KazooClient) -> None:
    set_tenant(zk, "acme")
    admin = add_api_key(zk, "acme", "admin")
    grant_tenant_admin(zk, admin, "acme")
    reader = add_api_key(zk, "acme", "reader")
    grant(zk, reader.principal, "Topic", "acme.orders", ("Read",), pattern="literal")
    owner = login(secure.sasl_port, admin)
    for topic in ("orders", "secrets"):
        create_topic(owner, topic)
    client = login(secure.sasl_port, reader)

    listing = client.request(Api.METADATA, 12, {"topics": None})
    assert [t["name"] for t in listing["topics"]] == ["orders"]  # secrets: no Describe
    asked = client.request(Api.METADATA, 12, {"topics": [{"name": "secrets"}],
                                              "allow_auto_topic_creation": False})
    assert asked["topics"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert _produce(client, "orders") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert _create(client, "more")["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    joined = client.request(Api.JOIN_GROUP, 9, {
        "group_id": "readers", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
        "member_id": "", "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}]})
    assert joined["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
    pid = client.request(Api.INIT_PRODUCER_ID, 4, {"transactional_id": None,
                                                   "transaction_timeout_ms": 60000})
    assert pid["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    txn = client.request(Api.INIT_PRODUCER_ID, 4, {"transactional_id": "tx-1",
                                                   "transaction_timeout_ms": 60000})
    assert txn["error_code"] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    broker_config = client.request(Api.DESCRIBE_CONFIGS, 4, {"resources": [
        {"resource_type": 4, "resource_name": "1", "configuration_keys": None}]})["results"][0]
    assert broker_config["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert broker_config["resource_name"] == "1"

    # A grant written by the control plane applies to the open connection at once.
    grant(zk, reader.principal, "Topic", "acme.orders", ("Read", "Write"), pattern="literal")
    wait_for(lambda: _produce(client, "orders") == ErrorCode.NONE, timeout=5)
    assert client.request(Api.INIT_PRODUCER_ID, 4, {
        "transactional_id": None, "transaction_timeout_ms": 60000})["error_code"] == 0


def test_topic_creation_stops_at_the_plans_partition_allowance(secure: SecureBroker,
                                                               zk: KazooClient) -> None:
    set_tenant(zk, "acme", max_partitions=5)
    admin = add_api_key(zk, "acme", "admin")
    grant_tenant_admin(zk, admin, "acme")
    client = login(secure.sasl_port, admin)
    create_topic(client, "big", partitions=4)
    assert _create(client, "huge", partitions=2)["error_code"] == ErrorCode.POLICY_VIOLATION
    grown = client.request(Api.CREATE_PARTITIONS, 3, {"timeout_ms": 15000, "topics": [
        {"name": "big", "count": 6, "assignments": None}]})["results"][0]
    assert grown["name"] == "big" and grown["error_code"] == ErrorCode.POLICY_VIOLATION
    create_topic(client, "small", partitions=1)
    auto = client.request(Api.METADATA, 12, {"topics": [{"name": "auto"}],
                                             "allow_auto_topic_creation": True})["topics"][0]
    assert auto["error_code"] == ErrorCode.POLICY_VIOLATION
    set_tenant(zk, "acme", max_partitions=10)  # an upgraded plan applies without restart
    wait_for(lambda: _create(client, "huge", partitions=2)["error_code"] in (
        ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT), timeout=10)
    assert sorted(zk.get_children("/brokers/topics")) == [
        "acme.big", "acme.huge", "acme.small"]
