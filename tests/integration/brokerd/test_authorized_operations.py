"""KIP-430 through confluent-kafka's AdminClient against a live broker: describe_topics,
describe_cluster and describe_consumer_groups with include_authorized_operations answer
the operations the caller's principal may do, decided by the authorizer that enforces the
ACLs: everything for the operator (a super user on the PLAINTEXT listener), exactly the
granted operations (and what they imply) for a tenant's principal; nothing when not asked."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AclOperation, AdminClient, NewTopic
from kazoo.client import KazooClient

from brokerd.protocol import ApiKey as Api
from brokerd.security.authorized_operations import NOT_PROVIDED
from tests.integration.brokerd.tenancy_fixtures import (
    WATCH_PROPAGATION_S,
    SecureBroker,
    add_api_key,
    confluent_auth,
    grant,
    grant_tenant_admin,
    login,
    set_tenant,
    start_secure_broker,
)

pytestmark = pytest.mark.integration
TIMEOUT = 20
EVERY_TOPIC_OPERATION = {
    AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DELETE,
    AclOperation.ALTER, AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS}


@pytest.fixture
def secure(zk_connect: str, tmp_path: Path) -> Iterator[SecureBroker]:
    broker = start_secure_broker(zk_connect, tmp_path)
    yield broker
    broker.stop()


def _topic_operations(admin: AdminClient, name: str) -> set[AclOperation] | None:
    future = admin.describe_topics(TopicCollection([name]), include_authorized_operations=True,
                                   request_timeout=TIMEOUT)[name]
    operations = future.result(timeout=TIMEOUT).authorized_operations
    return None if operations is None else set(operations)


def _cluster_operations(admin: AdminClient, asked: bool = True) -> set[AclOperation] | None:
    described = admin.describe_cluster(include_authorized_operations=asked,
                                       request_timeout=TIMEOUT).result(timeout=TIMEOUT)
    operations = described.authorized_operations
    return None if operations is None else set(operations)


def _group_operations(admin: AdminClient, group: str) -> set[AclOperation] | None:
    future = admin.describe_consumer_groups([group], include_authorized_operations=True,
                                            request_timeout=TIMEOUT)[group]
    operations = future.result(timeout=TIMEOUT).authorized_operations
    return None if operations is None else set(operations)


def test_operator_may_do_everything(secure: SecureBroker) -> None:
    operator = AdminClient({"bootstrap.servers": secure.process.bootstrap})
    operator.create_topics([NewTopic("ops", 1, 1)])["ops"].result(timeout=TIMEOUT)
    assert _topic_operations(operator, "ops") == EVERY_TOPIC_OPERATION
    assert _cluster_operations(operator) == {
        AclOperation.CREATE, AclOperation.ALTER, AclOperation.DESCRIBE,
        AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE}
    assert _cluster_operations(operator, asked=False) is None
    assert _group_operations(operator, "ops-group") == {
        AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE}


def test_tenant_gets_exactly_what_its_acls_grant(secure: SecureBroker, zk: KazooClient
                                                 ) -> None:
    set_tenant(zk, "acme")
    admin_key = add_api_key(zk, "acme", "admin")
    grant_tenant_admin(zk, admin_key, "acme")
    owner = AdminClient(confluent_auth(secure, admin_key))
    for name in ("orders", "audit"):
        owner.create_topics([NewTopic(name, 1)])[name].result(timeout=TIMEOUT)
    assert _topic_operations(owner, "orders") == EVERY_TOPIC_OPERATION  # All

    reader_key = add_api_key(zk, "acme", "reader")
    grant(zk, reader_key.principal, "Topic", "acme.orders", ("Read",), pattern="literal")
    grant(zk, reader_key.principal, "Topic", "acme.audit", ("Write", "AlterConfigs"),
          pattern="literal")
    grant(zk, reader_key.principal, "Group", "acme.readers", ("Read",), pattern="literal")
    time.sleep(WATCH_PROPAGATION_S)  # the broker learns grants through ZooKeeper watches
    reader = AdminClient(confluent_auth(secure, reader_key))
    # Read implies Describe; Write implies Describe; AlterConfigs implies DescribeConfigs.
    assert _topic_operations(reader, "orders") == {AclOperation.READ, AclOperation.DESCRIBE}
    assert _topic_operations(reader, "audit") == {
        AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALTER_CONFIGS,
        AclOperation.DESCRIBE_CONFIGS}
    assert _group_operations(reader, "readers") == {AclOperation.READ, AclOperation.DESCRIBE}
    # No cluster ACL: only IdempotentWrite, which Write on some topic grants (Kafka's rule).
    assert _cluster_operations(reader) == {AclOperation.IDEMPOTENT_WRITE}
    assert _cluster_operations(owner) == {AclOperation.IDEMPOTENT_WRITE}
    viewer_key = add_api_key(zk, "acme", "viewer")
    grant(zk, viewer_key.principal, "Topic", "acme.orders", ("Describe",), pattern="literal")
    time.sleep(WATCH_PROPAGATION_S)
    viewer = AdminClient(confluent_auth(secure, viewer_key))
    assert _topic_operations(viewer, "orders") == {AclOperation.DESCRIBE}
    assert not _cluster_operations(viewer)  # librdkafka shows an empty bitfield as None
    wire = login(secure.sasl_port, viewer_key)  # so the wire shows it is 0, not "not asked"
    described = wire.request(Api.DESCRIBE_CLUSTER, 0, {
        "include_cluster_authorized_operations": True})
    assert described["cluster_authorized_operations"] == 0
    not_asked = wire.request(Api.DESCRIBE_CLUSTER, 0, {
        "include_cluster_authorized_operations": False})
    assert not_asked["cluster_authorized_operations"] == NOT_PROVIDED
    metadata = wire.request(Api.METADATA, 10, {
        "topics": [{"name": "orders", "topic_id": uuid.UUID(int=0)}], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": True,
        "include_topic_authorized_operations": True})
    assert metadata["topics"][0]["topic_authorized_operations"] == 1 << 8  # Describe
    assert metadata["cluster_authorized_operations"] == 0
    wire.close()


