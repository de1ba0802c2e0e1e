"""ACL admin APIs (KIP-140) through confluent-kafka's AdminClient against a real broker:
operators on the cluster's rules, tenants on their own view only (names and principals
translated both ways, another tenant's namespace refused), and the ZooKeeper nodes every
broker and the control plane read."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kazoo.client import KazooClient

from brokerd.protocol import ApiKey as Api
from brokerd.protocol import ErrorCode
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient
from tests.integration.brokerd.tenancy_fixtures import (
    WATCH_PROPAGATION_S,
    ApiKey,
    SecureBroker,
    add_api_key,
    confluent_auth,
    grant,
    login,
    set_tenant,
    start_secure_broker,
    wait_for,
)
from tests.support.confluent_admin import acl_filter

pytestmark = pytest.mark.integration
ALLOW = AclPermissionType.ALLOW
DESCRIBE_EVERYTHING = {"resource_type_filter": 1, "resource_name_filter": None,
                       "pattern_type_filter": 1, "principal_filter": None, "host_filter": None,
                       "operation": 1, "permission_type": 1}
EVERYTHING = acl_filter(ResourceType.ANY)


@pytest.fixture
def secure(zk_connect: str, tmp_path: Path) -> Iterator[SecureBroker]:
    broker = start_secure_broker(zk_connect, tmp_path)
    yield broker
    broker.stop()


def operator_admin(broker: SecureBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.process.bootstrap})


def acl_manager_key(zk: KazooClient, tenant: str, name: str = "admin") -> ApiKey:
    """A tenant principal allowed to manage ACLs (Alter and Describe on the cluster)."""
    key = add_api_key(zk, tenant, name)
    grant(zk, key.principal, "Cluster", "kafka-cluster", ("Alter", "Describe"),
          pattern="literal")
    time.sleep(WATCH_PROPAGATION_S)  # the client treats CLUSTER_AUTHORIZATION_FAILED as final
    return key


def tenant_admin(broker: SecureBroker, zk: KazooClient, tenant: str) -> AdminClient:
    return AdminClient(confluent_auth(broker, acl_manager_key(zk, tenant)))


def rule(name: str, principal: str, operation: AclOperation = AclOperation.READ,
         pattern: ResourcePatternType = ResourcePatternType.LITERAL,
         rtype: ResourceType = ResourceType.TOPIC) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, "*", operation, ALLOW)


def created(admin: AdminClient, rules: list[AclBinding]) -> dict[AclBinding, object]:
    return {binding: future.result(15) for binding, future in admin.create_acls(rules).items()}


def described(admin: AdminClient, acl_filter: AclBindingFilter = EVERYTHING) -> set[tuple]:
    return {(b.restype, b.name, b.resource_pattern_type, b.principal, b.operation)
            for b in admin.describe_acls(acl_filter).result(15)}


def znode(zk: KazooClient, path: str) -> dict[str, Any] | None:
    return json.loads(zk.get(path)[0]) if zk.exists(path) else None


def acls_at(zk: KazooClient, path: str) -> list[dict[str, Any]]:
    """The ACL entries of an ACL znode that must exist."""
    node = znode(zk, path)
    assert node is not None, f"{path} does not exist"
    return list(node["acls"])


def test_operators_create_describe_and_delete_cluster_wide(secure: SecureBroker,
                                                           zk: KazooClient) -> None:
    admin = operator_admin(secure)
    rules = [rule("orders", "User:ops-reader"),
             rule("logs-", "User:ops-reader", AclOperation.DESCRIBE, ResourcePatternType.PREFIXED),
             rule("kafka-cluster", "User:ops-reader", AclOperation.DESCRIBE,
                  rtype=ResourceType.BROKER)]
    assert set(created(admin, rules).values()) == {None}
    assert znode(zk, "/acls/literal/Topic/orders") == {"version": 1, "acls": [
        {"principal": "User:ops-reader", "permissionType": "Allow", "operation": "Read",
         "host": "*"}]}
    notifications = [znode(zk, f"/acls/changes/{c}") for c in zk.get_children("/acls/changes")]
    assert {"version": 1, "resourceType": "Topic", "name": "logs-",
            "patternType": "PREFIXED"} in notifications
    T, P, L = ResourceType.TOPIC, ResourcePatternType.PREFIXED, ResourcePatternType.LITERAL
    assert described(admin) >= {(T, "orders", L, "User:ops-reader", AclOperation.READ),
                                (T, "logs-", P, "User:ops-reader", AclOperation.DESCRIBE),
                                (ResourceType.BROKER, "kafka-cluster", L, "User:ops-reader",
                                 AclOperation.DESCRIBE)}
    # MATCH: every rule that applies to one topic
    match = acl_filter(T, "logs-app", ResourcePatternType.MATCH)
    assert described(admin, match) == {(T, "logs-", P, "User:ops-reader", AclOperation.DESCRIBE)}

    deleted = admin.delete_acls([acl_filter(T, principal="User:ops-reader")])
    [matches] = [future.result(15) for future in deleted.values()]
    assert {(b.name, b.operation) for b in matches} == {("orders", AclOperation.READ),
                                                        ("logs-", AclOperation.DESCRIBE)}
    assert not zk.exists("/acls/literal/Topic/orders")
    assert {b[0] for b in described(admin)} == {ResourceType.BROKER}


def test_refusals_keep_kafkas_codes(secure: SecureBroker, zk: KazooClient) -> None:
    admin = operator_admin(secure)
    futures = admin.create_acls([
        AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:x", "*",
                   AclOperation.READ, AclPermissionType.DENY),
        AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:x", "10.1.1.1",
                   AclOperation.READ, ALLOW)])
    for future in futures.values():
        with pytest.raises(KafkaException) as refused:
            future.result(15)
        assert refused.value.args[0].code() == KafkaError.INVALID_REQUEST
    assert not zk.exists("/acls/literal/Topic/t")


def test_a_tenant_manages_only_its_own_rules(secure: SecureBroker, zk: KazooClient) -> None:
    set_tenant(zk, "acme", acl_admin=True)
    set_tenant(zk, "globex", acl_admin=True)
    acme = tenant_admin(secure, zk, "acme")
    grant(zk, "globex.app", "Topic", "globex.orders", ("Read",), pattern="literal")
    grant(zk, "ops", "Topic", "acme.orders", ("Read",), pattern="literal")

    assert set(created(acme, [
        rule("orders", "User:app", AclOperation.WRITE),
        rule("", "User:app", AclOperation.DESCRIBE, ResourcePatternType.PREFIXED)]).values()) == {None}
    assert acls_at(zk, "/acls/literal/Topic/acme.orders") == [
        {"principal": "User:acme.app", "permissionType": "Allow", "operation": "Write",
         "host": "*"},
        {"principal": "User:ops", "permissionType": "Allow", "operation": "Read", "host": "*"}]
    assert zk.exists("/acls/prefixed/Topic/acme.")

    T = ResourceType.TOPIC
    # its own rules only, in its own names: not globex's, not the operator's User:ops rule
    seen = wait_for(lambda: described(acme) if len(described(acme)) == 4 else None)
    assert seen == {
        (T, "orders", ResourcePatternType.LITERAL, "User:app", AclOperation.WRITE),
        (T, "", ResourcePatternType.PREFIXED, "User:app", AclOperation.DESCRIBE),
        (ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:admin",
         AclOperation.ALTER),
        (ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:admin",
         AclOperation.DESCRIBE)}

    # another tenant's topic: refused, nothing written anywhere
    before = {path: znode(zk, path) for path in (
        "/acls/literal/Topic/globex.orders", "/acls/literal/Topic/acme.globex.orders")}
    [future] = acme.create_acls([rule("globex.orders", "User:app")]).values()
    with pytest.raises(KafkaException) as refused:
        future.result(15)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert {path: znode(zk, path) for path in before} == before
    [future] = acme.create_acls([rule("kafka-cluster", "User:app", AclOperation.ALTER_CONFIGS,
                                      rtype=ResourceType.BROKER)]).values()
    with pytest.raises(KafkaException) as broker_configs:  # the operators' to grant
        future.result(15)
    assert broker_configs.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    [future] = acme.create_acls([rule("orders", "User:globex.app")]).values()
    with pytest.raises(KafkaException) as bad_principal:
        future.result(15)
    assert bad_principal.value.args[0].code() == KafkaError.INVALID_REQUEST

    # deleting everything it can see leaves others' rules on the same resource alone
    [future] = acme.delete_acls([acl_filter(T)]).values()
    assert {(b.name, b.principal) for b in future.result(15)} == {("orders", "User:app"),
                                                                 ("", "User:app")}
    assert acls_at(zk, "/acls/literal/Topic/acme.orders") == [
        {"principal": "User:ops", "permissionType": "Allow", "operation": "Read", "host": "*"}]
    assert znode(zk, "/acls/literal/Topic/globex.orders") is not None


def test_tenants_need_the_plan_and_the_cluster_permission(secure: SecureBroker,
                                                          zk: KazooClient) -> None:
    set_tenant(zk, "acme", acl_admin=False)
    key = acl_manager_key(zk, "acme")
    without_plan = AdminClient(confluent_auth(secure, key))
    [future] = without_plan.create_acls([rule("orders", "User:app")]).values()
    with pytest.raises(KafkaException) as refused:
        future.result(15)
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert not zk.exists("/acls/literal/Topic/acme.orders")
    # librdkafka 2.x reports DescribeAcls' top-level error as an empty result: ask directly
    client = login(secure.sasl_port, key)
    answer = client.request(Api.DESCRIBE_ACLS, 3, DESCRIBE_EVERYTHING)
    assert answer["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert answer["resources"] == []

    set_tenant(zk, "globex", acl_admin=True)
    plain = AdminClient(confluent_auth(secure, add_api_key(zk, "globex", "app")))
    [future] = plain.create_acls([rule("orders", "User:app")]).values()
    with pytest.raises(KafkaException) as denied:
        future.result(15)
    assert denied.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert not zk.exists("/acls/literal/Topic/globex.orders")


def test_every_broker_enforces_and_lists_a_rule_another_broker_created(
        secure: SecureBroker, zk: KazooClient, zk_connect: str, tmp_path: Path) -> None:
    """CreateAcls on broker 1, DescribeAcls and enforcement on broker 2 (its watch)."""
    other = BrokerProcess(zk_connect, tmp_path / "logs-2", 2,
                          properties={"zookeeper.session.timeout.ms": "6000"})
    other.start()
    try:
        assert set(created(operator_admin(secure), [rule("shared", "User:ops")]).values()) == {None}
        client = WireClient(other.port)
        matching = {**DESCRIBE_EVERYTHING, "resource_name_filter": "shared"}
        answer = wait_for(lambda: client.request(Api.DESCRIBE_ACLS, 3, matching)["resources"])
        assert answer == [{"resource_type": 2, "resource_name": "shared", "pattern_type": 3,
                           "acls": [{"principal": "User:ops", "host": "*", "operation": 3,
                                     "permission_type": 3}]}]
        deleted = client.request(Api.DELETE_ACLS, 3, {"filters": [matching]})
        assert [m["principal"] for m in deleted["filter_results"][0]["matching_acls"]] == ["User:ops"]
        assert not zk.exists("/acls/literal/Topic/shared")
        wait_for(lambda: described(operator_admin(secure)) == set())
    finally:
        other.stop()


def test_kafka_python_manages_acls_too(secure: SecureBroker) -> None:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KpResourceType

    admin = KafkaAdminClient(bootstrap_servers=secure.process.bootstrap)
    try:
        acl = ACL("User:kp", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                  ResourcePattern(KpResourceType.TOPIC, "kp-topic", ACLResourcePatternType.LITERAL))
        assert len(admin.create_acls([acl])["succeeded"]) == 1
        everything = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                               ResourcePatternFilter(KpResourceType.ANY, None,
                                                     ACLResourcePatternType.ANY))
        listed, _ = admin.describe_acls(everything)
        assert [(a.principal, a.resource_pattern.resource_name) for a in listed] == [
            ("User:kp", "kp-topic")]
        [(_, deleted, _)] = admin.delete_acls([everything])
        assert [a.principal for a in deleted] == ["User:kp"]
        assert admin.describe_acls(everything)[0] == []
    finally:
        admin.close()
