"""Tenant isolation on a live broker: tenant A (acme), with every right inside its own
namespace, drives every served API against tenant B's (globex) topic and group names and
guesses of their cluster-wide and internal names.  Every call is denied or sees nothing,
and B's data, offsets, configs and partitions are untouched afterwards."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from brokerd.protocol import ApiKey as Api
from brokerd.protocol import ErrorCode
from brokerd.protocol.records import build_batch
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
)

B_MESSAGES = [f"globex-{i}".encode() for i in range(25)]
# Names A might try for B's resources: B's own, B's cluster-wide ones, internal topics.
TOPIC_GUESSES = ["payments", "globex.payments", "..globex.payments", "__consumer_offsets",
                 "__usage"]
GROUP_GUESSES = ["billing", "globex.billing"]
UNTOUCHED = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID,
             ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.INVALID_TOPIC_EXCEPTION,
             ErrorCode.NOT_LEADER_OR_FOLLOWER}
# A request A sends: API, version, body.
Call = tuple[Api, int, dict[str, Any]]


@pytest.fixture
def secure(zk_connect: str, tmp_path: Path) -> Iterator[SecureBroker]:
    broker = start_secure_broker(zk_connect, tmp_path, **{"num.partitions": "2"})
    yield broker
    broker.stop()


def _tenant(zk: KazooClient, slug: str) -> ApiKey:
    set_tenant(zk, slug, max_partitions=20)
    key = add_api_key(zk, slug, "admin")
    grant_tenant_admin(zk, key, slug)
    return key


def _setup_b(secure: SecureBroker, b: ApiKey) -> None:
    """B owns topic payments (2 partitions) with messages and group billing with offsets."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer(confluent_auth(secure, b))
    for value in B_MESSAGES:
        producer.produce("payments", value, partition=0)
    assert producer.flush(15) == 0
    consumer = Consumer({**confluent_auth(secure, b), "group.id": "billing",
                         "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition("payments", 0, 7)], asynchronous=False)
    consumer.close()


def _b_state(secure: SecureBroker, b: ApiKey) -> tuple[list[bytes | None], int, int, str | None]:
    """(B's messages, its partitions, committed offset of billing, retention.ms config)."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource

    consumer = Consumer({**confluent_auth(secure, b), "group.id": "billing",
                         "enable.auto.commit": False})
    committed = consumer.committed([TopicPartition("payments", 0)], timeout=10)[0].offset
    consumer.assign([TopicPartition("payments", 0, 0)])
    values: list[bytes | None] = []
    deadline = time.monotonic() + 15
    while len(values) < len(B_MESSAGES) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    admin = AdminClient(confluent_auth(secure, b))
    partitions = len(admin.list_topics(timeout=10).topics["payments"].partitions)
    resource = ConfigResource("topic", "payments")
    config = admin.describe_configs([resource])[resource].result(timeout=10)
    return values, partitions, committed, config["retention.ms"].value


def _errors(value: object) -> list[int]:
    """Every error_code anywhere in a response."""
    if isinstance(value, dict):
        return [code for key, item in value.items() for code in (
            [item] if key == "error_code" else _errors(item))]
    if isinstance(value, list):
        return [code for item in value for code in _errors(item)]
    return []


def _b_topic_id(zk: KazooClient) -> uuid.UUID:
    from brokerd.coordination.znodes import TopicAssignment

    data, _ = zk.get("/brokers/topics/globex.payments")
    return TopicAssignment.decode("globex.payments", data).topic_id


def _drive_topic_apis(a: WireClient, name: str, b_topic_id: uuid.UUID) -> None:
    records = build_batch([(None, b"intruder", [], 1_700_000_000_000)])
    metadata = a.request(Api.METADATA, 12, {"topics": [{"name": name}],
                                            "allow_auto_topic_creation": False})
    assert [t["name"] for t in metadata["topics"]] == [name]
    assert metadata["topics"][0]["error_code"] in UNTOUCHED
    by_id = a.request(Api.METADATA, 12, {"topics": [{"topic_id": b_topic_id, "name": None}]})
    assert [t["error_code"] for t in by_id["topics"]] == [ErrorCode.UNKNOWN_TOPIC_ID]
    produce = a.request(Api.PRODUCE, 9, {"acks": -1, "timeout_ms": 2000, "topic_data": [
        {"name": name, "partition_data": [{"index": 0, "records": records}]}]})
    assert produce["responses"][0]["name"] == name
    assert set(_errors(produce)) <= UNTOUCHED
    fetch = a.request(Api.FETCH, 12, {"max_wait_ms": 0, "min_bytes": 0, "topics": [
        {"topic": name, "partitions": [{"partition": 0, "fetch_offset": 0,
                                        "partition_max_bytes": 1 << 20}]}]})
    assert all(p["records"] in (None, b"") for t in fetch["responses"] for p in t["partitions"])
    assert set(_errors(fetch)) - {0} <= UNTOUCHED
    offsets = a.request(Api.LIST_OFFSETS, 7, {"replica_id": -1, "topics": [
        {"name": name, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    assert set(_errors(offsets)) <= UNTOUCHED
    calls: list[Call] = [
        (Api.DELETE_RECORDS, 2, {"timeout_ms": 1000, "topics": [
            {"name": name, "partitions": [{"partition_index": 0, "offset": -1}]}]}),
        (Api.CREATE_PARTITIONS, 3, {"timeout_ms": 1000, "topics": [
            {"name": name, "count": 5, "assignments": None}]}),
        (Api.DELETE_TOPICS, 6, {"timeout_ms": 1000, "topics": [
            {"name": name, "topic_id": uuid.UUID(int=0)}]}),
        (Api.DELETE_TOPICS, 6, {"timeout_ms": 1000, "topics": [
            {"name": None, "topic_id": b_topic_id}]}),
        (Api.DESCRIBE_CONFIGS, 4, {"resources": [
            {"resource_type": 2, "resource_name": name, "configuration_keys": None}]}),
        (Api.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
            {"resource_type": 2, "resource_name": name, "configs": [
                {"name": "retention.ms", "config_operation": 0, "value": "1"}]}]}),
    ]
    for api, version, body in calls:
        answer = a.request(api, version, body)
        assert set(_errors(answer)) <= UNTOUCHED, (api, name, answer)


def _drive_group_apis(a: WireClient, group: str) -> None:
    described = a.request(Api.DESCRIBE_GROUPS, 5, {"groups": [group]})["groups"][0]
    assert described["group_id"] == group and described["members"] == []
    fetched = a.request(Api.OFFSET_FETCH, 8, {"groups": [
        {"group_id": group, "topics": None}]})["groups"][0]
    assert fetched["group_id"] == group and fetched["topics"] == []
    deleted = a.request(Api.DELETE_GROUPS, 2, {"groups_names": [group]})["results"][0]
    assert deleted["group_id"] == group
    assert deleted["error_code"] in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.NOT_COORDINATOR,
                                     ErrorCode.COORDINATOR_NOT_AVAILABLE)
    removed = a.request(Api.OFFSET_DELETE, 0, {"group_id": group, "topics": [
        {"name": "payments", "partitions": [{"partition_index": 0}]}]})
    assert removed["error_code"] != ErrorCode.NONE or set(_errors(removed)) != {0}
    calls: list[Call] = [
        (Api.HEARTBEAT, 4, {"group_id": group, "generation_id": 1, "member_id": "intruder"}),
        (Api.SYNC_GROUP, 5, {"group_id": group, "generation_id": 1, "member_id": "intruder",
                             "assignments": []}),
        (Api.LEAVE_GROUP, 5, {"group_id": group, "members": [{"member_id": "intruder"}]}),
    ]
    for api, version, body in calls:
        assert set(_errors(a.request(api, version, body))) - {0}, api  # some error
    coordinator = a.request(Api.FIND_COORDINATOR, 4, {"key_type": 0,
                                                      "coordinator_keys": [group]})
    assert [c["key"] for c in coordinator["coordinators"]] == [group]
    # A commit under B's group name lands in A's own group (acme.<name>), never in B's.
    committed = a.request(Api.OFFSET_COMMIT, 8, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
        "topics": [{"name": "payments", "partitions": [
            {"partition_index": 0, "committed_offset": 0}]}]})
    assert [t["name"] for t in committed["topics"]] == ["payments"]


def test_tenant_a_cannot_see_or_touch_tenant_b(secure: SecureBroker, zk: KazooClient) -> None:
    a_key, b_key = _tenant(zk, "acme"), _tenant(zk, "globex")
    _setup_b(secure, b_key)
    before = _b_state(secure, b_key)
    assert before[0] == B_MESSAGES and before[2] == 7
    a = login(secure.sasl_port, a_key)
    create_topic(a, "payments")  # both tenants may own "payments"
    b_topic_id = _b_topic_id(zk)
    for name in TOPIC_GUESSES[1:]:
        _drive_topic_apis(a, name, b_topic_id)
    for group in GROUP_GUESSES:
        _drive_group_apis(a, group)
    listing = a.request(Api.METADATA, 12, {"topics": None})
    assert [t["name"] for t in listing["topics"]] == ["payments"]
    assert listing["topics"][0]["topic_id"] != b_topic_id
    # Only A's own groups: the ones its commits above created under B's names (stored as
    # acme.billing and acme.globex.billing), never B's globex.billing.
    listed = {g["group_id"] for g in a.request(Api.LIST_GROUPS, 4, {})["groups"]}
    assert listed <= set(GROUP_GUESSES)
    operator = WireClient(secure.process.port)
    everything = {g["group_id"] for g in operator.request(Api.LIST_GROUPS, 4, {})["groups"]}
    operator.close()
    assert "globex.billing" in everything  # B's group exists, and A was not shown it:
    assert {f"acme.{name}" for name in listed} <= everything
    a.close()
    assert _b_state(secure, b_key) == before


def test_kcat_lists_only_the_tenants_topics(secure: SecureBroker, zk: KazooClient) -> None:
    a_key, b_key = _tenant(zk, "acme"), _tenant(zk, "globex")
    for key, topic in ((a_key, "orders"), (b_key, "payments"), (b_key, "orders")):
        client = login(secure.sasl_port, key)
        create_topic(client, topic)
        client.close()
    # SCRAM with kcat 1.7.1 (librdkafka 2.0.2, which repeats the client nonce in its
    # client-final message; accepted as Kafka does).
    listing = subprocess.run(
        ["kcat", "-L", "-J", "-b", secure.sasl_bootstrap, "-X", "security.protocol=SASL_PLAINTEXT",
         "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", f"sasl.username={a_key.key}",
         "-X", f"sasl.password={a_key.secret}"],
        check=False, capture_output=True, text=True, timeout=20)
    assert listing.returncode == 0, listing.stderr
    topics = sorted(topic["topic"] for topic in json.loads(listing.stdout)["topics"])
    assert topics == ["orders"]
