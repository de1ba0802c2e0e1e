"""Kafka ACL semantics: literal/prefixed/wildcard matching, implications, super users, deny."""

from __future__ import annotations

import json

import pytest

from brokerd.security import (
    ANONYMOUS,
    CLUSTER_NAME,
    AclOperation,
    Authorizer,
    InvalidAclData,
    PatternType,
    Principal,
    ResourceType,
)

Op = AclOperation
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
ORDERS = Principal("acme.orders", "acme")
BILLING = Principal("acme.billing", "acme")
OPERATOR = Principal("ops", None)


def acls(*rules: tuple[str, str] | tuple[str, str, str]) -> str:
    """The znode JSON for (principal, operation[, host]) allow rules."""
    return json.dumps({"version": 1, "acls": [
        {"principal": rule[0], "permissionType": "Allow", "operation": rule[1],
         "host": rule[2] if len(rule) == 3 else "*"} for rule in rules]})


@pytest.fixture
def authorizer() -> Authorizer:
    return Authorizer(super_users=[ANONYMOUS.kafka_principal, "User:ops"])


def test_default_deny_for_tenants(authorizer: Authorizer) -> None:
    assert not authorizer.authorize(ORDERS, Op.READ, TOPIC, "acme.orders")
    assert not authorizer.authorize(ORDERS, Op.DESCRIBE, CLUSTER, CLUSTER_NAME)


def test_super_users_may_do_anything(authorizer: Authorizer) -> None:
    assert authorizer.authorize(ANONYMOUS, Op.DELETE, TOPIC, "__consumer_offsets")
    assert authorizer.authorize(OPERATOR, Op.ALTER_CONFIGS, CLUSTER, CLUSTER_NAME)
    assert not Authorizer(super_users=[]).authorize(ANONYMOUS, Op.READ, TOPIC, "x")


def test_literal_rule_matches_exactly_that_name(authorizer: Authorizer) -> None:
    authorizer.set_resource_acls("literal", "Topic", "acme.orders",
                                 acls(("User:acme.orders", "Read")))
    assert authorizer.authorize(ORDERS, Op.READ, TOPIC, "acme.orders")
    assert not authorizer.authorize(ORDERS, Op.READ, TOPIC, "acme.orders2")
    assert not authorizer.authorize(ORDERS, Op.READ, GROUP, "acme.orders")  # other resource type
    assert not authorizer.authorize(ORDERS, Op.WRITE, TOPIC, "acme.orders")  # other operation
    assert not authorizer.authorize(BILLING, Op.READ, TOPIC, "acme.orders")  # other principal


def test_prefixed_rule_matches_names_starting_with_it(authorizer: Authorizer) -> None:
    authorizer.set_resource_acls(PatternType.PREFIXED, TOPIC, "acme.",
                                 acls(("User:acme.orders", "Write")))
    authorizer.set_resource_acls("PREFIXED", TOPIC, "acme.logs.",
                                 acls(("User:acme.billing", "Read")))
    assert authorizer.authorize(ORDERS, Op.WRITE, TOPIC, "acme.anything")
    assert authorizer.authorize(ORDERS, Op.WRITE, TOPIC, "acme.")
    assert not authorizer.authorize(ORDERS, Op.WRITE, TOPIC, "acme")
    assert not authorizer.authorize(ORDERS, Op.WRITE, TOPIC, "acme-eu.anything")
    assert not authorizer.authorize(ORDERS, Op.WRITE, TOPIC, "globex.acme.x")
    assert authorizer.authorize(BILLING, Op.READ, TOPIC, "acme.logs.app")
    assert not authorizer.authorize(BILLING, Op.READ, TOPIC, "acme.log")


def test_wildcard_resource_and_principal(authorizer: Authorizer) -> None:
    authorizer.set_resource_acls("literal", GROUP, "*", acls(("User:acme.orders", "Read")))
    authorizer.set_resource_acls("literal", TOPIC, "acme.public", acls(("User:*", "Read")))
    assert authorizer.authorize(ORDERS, Op.READ, GROUP, "acme.any-group")
    assert not authorizer.authorize(BILLING, Op.READ, GROUP, "acme.any-group")
    assert authorizer.authorize(BILLING, Op.READ, TOPIC, "acme.public")


@pytest.mark.parametrize(("granted", "requested", "allowed"), [
    ("All", "Read", True), ("All", "AlterConfigs", True), ("All", "Describe", True),
    ("Read", "Describe", True), ("Write", "Describe", True), ("Delete", "Describe", True),
    ("Alter", "Describe", True), ("Create", "Describe", False),
    ("AlterConfigs", "DescribeConfigs", True), ("DescribeConfigs", "AlterConfigs", False),
    ("Describe", "Read", False), ("Read", "Write", False), ("Write", "Read", False),
    ("Alter", "AlterConfigs", False), ("Read", "DescribeConfigs", False),
])
def test_operation_implications(authorizer: Authorizer, granted: str, requested: str,
                                allowed: bool) -> None:
    authorizer.set_resource_acls("literal", TOPIC, "acme.t", acls(("User:acme.orders", granted)))
    assert authorizer.authorize(ORDERS, AclOperation(requested), TOPIC, "acme.t") is allowed


def test_idempotent_write_is_implied_by_write_on_any_topic(authorizer: Authorizer) -> None:
    assert not authorizer.authorize(ORDERS, Op.IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME)
    authorizer.set_resource_acls("literal", TOPIC, "acme.t", acls(("User:acme.orders", "Read")))
    assert not authorizer.authorize(ORDERS, Op.IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME)
    authorizer.set_resource_acls("prefixed", TOPIC, "acme.", acls(("User:acme.orders", "Write")))
    assert authorizer.authorize(ORDERS, Op.IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME)
    assert not authorizer.authorize(BILLING, Op.IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME)
    authorizer.set_resource_acls("prefixed", TOPIC, "acme.", None)
    assert not authorizer.authorize(ORDERS, Op.IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME)


def test_idempotent_write_by_explicit_cluster_rule(authorizer: Authorizer) -> None:
    authorizer.set_resource_acls("literal", CLUSTER, CLUSTER_NAME,
                                 acls(("User:acme.billing", "IdempotentWrite")))
    assert authorizer.authorize(BILLING, Op.IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME)
    assert not authorizer.authorize(BILLING, Op.WRITE, TOPIC, "acme.t")


def test_host_restricted_rule(authorizer: Authorizer) -> None:
    authorizer.set_resource_acls("literal", TOPIC, "acme.t",
                                 acls(("User:acme.orders", "Read", "10.0.0.1")))
    assert authorizer.authorize(ORDERS, Op.READ, TOPIC, "acme.t", host="10.0.0.1")
    assert not authorizer.authorize(ORDERS, Op.READ, TOPIC, "acme.t", host="10.0.0.2")
    assert not authorizer.authorize(ORDERS, Op.READ, TOPIC, "acme.t")


def test_updates_and_deletion_take_effect_despite_memoised_decisions(
        authorizer: Authorizer) -> None:
    assert not authorizer.authorize(ORDERS, Op.READ, TOPIC, "acme.t")
    authorizer.set_resource_acls("literal", TOPIC, "acme.t", acls(("User:acme.orders", "Read")))
    assert authorizer.authorize(ORDERS, Op.READ, TOPIC, "acme.t")
    authorizer.set_resource_acls("literal", TOPIC, "acme.t", acls(("User:acme.billing", "Read")))
    assert not authorizer.authorize(ORDERS, Op.READ, TOPIC, "acme.t")
    authorizer.set_resource_acls("literal", TOPIC, "acme.t", None)
    assert not authorizer.authorize(BILLING, Op.READ, TOPIC, "acme.t")


def test_malformed_znode_fails_closed(authorizer: Authorizer) -> None:
    authorizer.set_resource_acls("literal", TOPIC, "acme.t", acls(("User:acme.orders", "Read")))
    with pytest.raises(InvalidAclData):
        authorizer.set_resource_acls("literal", TOPIC, "acme.t", b"{broken")
    assert not authorizer.authorize(ORDERS, Op.READ, TOPIC, "acme.t")


@pytest.mark.parametrize(("data", "complaint"), [
    (b"{broken", "not JSON"),
    (json.dumps({"version": 2, "acls": []}), "version 1"),
    (json.dumps({"version": 1}), "'acls' list"),
    (json.dumps({"version": 1, "acls": ["x"]}), "not an object"),
    (json.dumps({"version": 1, "acls": [{"principal": "User:a", "operation": "Read",
                                          "host": "*"}]}), "permissionType"),
    (acls(("User:a", "Read")).replace("Allow", "Deny"), "only Allow"),
    (acls(("User:a", "Frobnicate")), "unknown ACL operation"),
    (acls(("Group:a", "Read")), "not User:<name>"),
    (acls(("User:", "Read")), "not User:<name>"),
])
def test_acl_znode_errors(authorizer: Authorizer, data: bytes | str, complaint: str) -> None:
    with pytest.raises(InvalidAclData, match=complaint):
        authorizer.set_resource_acls("literal", TOPIC, "t", data)


def test_unknown_pattern_or_resource_type(authorizer: Authorizer) -> None:
    with pytest.raises(InvalidAclData, match="pattern type"):
        authorizer.set_resource_acls("match", TOPIC, "t", None)
    with pytest.raises(InvalidAclData, match="resource type"):
        authorizer.set_resource_acls("literal", "DelegationToken", "t", None)


def test_a_thousand_partitions_cost_one_evaluation_per_topic(
        authorizer: Authorizer, monkeypatch: pytest.MonkeyPatch) -> None:
    authorizer.set_resource_acls("prefixed", TOPIC, "acme.", acls(("User:acme.orders", "Write")))
    evaluated: list[str] = []
    evaluate = authorizer._evaluate

    def counting(user, operation, rtype, name, host):  # type: ignore[no-untyped-def]
        evaluated.append(name)
        return evaluate(user, operation, rtype, name, host)

    monkeypatch.setattr(authorizer, "_evaluate", counting)
    names = [f"acme.t{partition % 3}" for partition in range(1000)] + ["globex.t"]
    decisions = authorizer.authorize_many(ORDERS, Op.WRITE, TOPIC, names)
    assert decisions == {"acme.t0": True, "acme.t1": True, "acme.t2": True, "globex.t": False}
    for name in names:
        authorizer.authorize(ORDERS, Op.WRITE, TOPIC, name)
    assert sorted(evaluated) == ["acme.t0", "acme.t1", "acme.t2", "globex.t"]


def test_decision_memory_is_bounded() -> None:
    authorizer = Authorizer(super_users=[], max_cached_decisions=10)
    authorizer.set_resource_acls("prefixed", TOPIC, "acme.", acls(("User:acme.orders", "Read")))
    for index in range(25):
        assert authorizer.authorize(ORDERS, Op.READ, TOPIC, f"acme.{index}")
    assert len(authorizer._decisions) <= 10
