"""ACLs kept in step both ways between the database and ``/acls/…``: the three-way merge's
rules (pure), and the merge against a real ZooKeeper with rules written as brokerd writes
them (CreateAcls/DeleteAcls edit the resource znode directly)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tenants import acl_sync, publication, services
from tenants.acl_merge import Fit, needs_merge, plan_merge, representable
from tenants.models import Acl, AuditEvent, Principal, PublishedAcls

TOPIC = ("LITERAL", "Topic", "acme.orders")
TENANTS = {"acme", "globex"}
READER = ("User:acme.reader", "Read", "*")
WRITER = ("User:acme.app", "Write", "*")
OPS = ("User:ops", "Read", "*")


def test_rules_the_model_can_hold() -> None:
    assert representable(TOPIC, READER, TENANTS) == Fit("acme", "reader", "orders")
    assert representable(("PREFIXED", "Topic", "acme."), READER, TENANTS) == Fit("acme", "reader", "")
    cluster = ("LITERAL", "Cluster", "kafka-cluster")
    assert representable(cluster, ("User:globex.app", "Alter", "*"), TENANTS) == Fit(
        "globex", "app", "kafka-cluster")
    for resource, entry in [
            (TOPIC, OPS),                                          # no tenant's principal
            (TOPIC, ("User:globex.app", "Read", "*")),             # another tenant's principal
            (TOPIC, ("User:acme.reader", "Read", "10.0.0.1")),     # a host
            (TOPIC, ("User:acme.a.b", "Read", "*")),               # not a principal name
            (TOPIC, ("User:nobody.app", "Read", "*")),             # no such tenant
            (("LITERAL", "Topic", "orders"), READER),              # a resource of no tenant
            (("LITERAL", "Topic", "acme."), READER)]:              # an empty literal name
        assert representable(resource, entry, TENANTS) is None, (resource, entry)


def test_the_three_way_merge() -> None:
    # a rule added over Kafka is adopted and kept; one a console revoked stays revoked
    plan = plan_merge(TOPIC, base={WRITER}, cluster={WRITER, READER}, rows=set(), tenants=TENANTS)
    assert plan.adopt == {READER} and plan.publish == {READER} and not plan.forget
    # a rule deleted over Kafka is forgotten; one granted in the console is published
    plan = plan_merge(TOPIC, base={WRITER, READER}, cluster={WRITER}, rows={WRITER, READER},
                      tenants=TENANTS)
    assert plan.forget == {READER} and plan.publish == {WRITER}
    plan = plan_merge(TOPIC, base=set(), cluster=set(), rows={WRITER}, tenants=TENANTS)
    assert plan.publish == {WRITER} and not plan.adopt
    # others' rules survive the control plane's writes, until the control plane owns them
    plan = plan_merge(TOPIC, base=set(), cluster={OPS}, rows={WRITER}, tenants=TENANTS)
    assert plan.publish == {OPS, WRITER} and not plan.adopt
    assert plan.managed == {WRITER}  # the next base: OPS stays someone else's
    plan = plan_merge(TOPIC, base={WRITER}, cluster={OPS, WRITER}, rows={WRITER}, tenants=TENANTS)
    assert plan.publish == {OPS, WRITER}
    gone = plan_merge(TOPIC, base={READER}, cluster={READER}, rows=set(), tenants=set())
    assert gone.publish == frozenset()  # a deleted tenant's published rule leaves with it


def test_only_changes_the_database_cares_about_trigger_a_merge() -> None:
    assert not needs_merge(TOPIC, {WRITER}, {WRITER, OPS}, TENANTS)
    assert needs_merge(TOPIC, {WRITER}, {WRITER, READER}, TENANTS)
    assert needs_merge(TOPIC, {WRITER}, {OPS}, TENANTS)
    # a tenant's deletion is the database's change: its own publication task removes the rules
    assert not needs_merge(TOPIC, {READER}, {READER}, set())


def _entries(zk: Any, path: str) -> set[tuple[str, str, str]] | None:
    if not zk.exists(path):
        return None
    return {(r["principal"], r["operation"], r["host"]) for r in json.loads(zk.get(path)[0])["acls"]}


def _broker_writes(zk: Any, path: str, entries: set[tuple[str, str, str]]) -> None:
    """What brokerd's CreateAcls/DeleteAcls leave behind (its own byte form)."""
    data = json.dumps({"version": 1, "acls": [
        {"principal": p, "permissionType": "Allow", "operation": o, "host": h}
        for p, o, h in sorted(entries)]}).encode()
    if zk.exists(path):
        zk.set(path, data)
    else:
        zk.create(path, data, makepath=True)


def test_merge_against_zookeeper(make_tenant: Any, zk: Any) -> None:
    acme = make_tenant("acme")
    app = services.create_principal(None, acme, name="app")
    granted = services.grant_acl(None, acme, principal=app, resource_type="Topic",
                                 resource_name="orders", operation="Write")
    path = "/acls/literal/Topic/acme.orders"
    assert publication.sync_acl_resource(zk, TOPIC) == [f"wrote {path}"]
    assert _entries(zk, path) == {WRITER}

    # CreateAcls over Kafka (a new principal, and an operator's rule for a non-tenant user)
    _broker_writes(zk, path, {WRITER, READER, OPS})
    assert acl_sync.discover(zk) == ["discovered ACL acme.reader Read Topic:LITERAL:orders"]
    reader = Principal.objects.get(tenant=acme, name="reader")
    assert Acl.objects.filter(principal=reader, operation="Read", resource_name="orders").exists()
    assert {e.action for e in AuditEvent.objects.filter(action__endswith=".discover")} == {
        "principal.discover", "acl.discover"}
    assert acl_sync.discover(zk) == []  # nothing new: one read, no write

    # a console revocation that runs after an unimported CreateAcls keeps the new rule
    services.revoke_acl(None, granted)
    late = ("User:acme.late", "Describe", "*")
    _broker_writes(zk, path, {WRITER, READER, OPS, late})
    publication.sync_acl_resource(zk, TOPIC)
    assert _entries(zk, path) == {READER, OPS, late}
    assert Acl.objects.filter(principal__name="late").exists()

    # DeleteAcls over Kafka: the rows go, the operator's rule is not the control plane's
    _broker_writes(zk, path, {OPS})
    changes = acl_sync.discover(zk)
    assert len(changes) == 2 and not Acl.objects.filter(resource_name="orders").exists()
    assert AuditEvent.objects.filter(action="acl.forget").count() == 2
    assert _entries(zk, path) == {OPS}
    assert not PublishedAcls.objects.filter(resource_name="acme.orders").exists()  # none ours


@pytest.mark.parametrize("wire_first", [True, False])
def test_a_conflicting_write_is_merged_again(make_tenant: Any, zk: Any, monkeypatch: Any,
                                              wire_first: bool) -> None:
    """A CreateAcls landing between the control plane's read and its write is not lost."""
    acme = make_tenant("acme")
    app = services.create_principal(None, acme, name="app")
    services.grant_acl(None, acme, principal=app, resource_type="Topic",
                       resource_name="orders", operation="Write")
    path = "/acls/literal/Topic/acme.orders"
    if wire_first:
        _broker_writes(zk, path, {OPS})
    original = acl_sync.read_entries
    calls = []

    def read_then_race(data: bytes | None) -> set[tuple[str, str, str]]:
        calls.append(data)
        if len(calls) == 1:
            _broker_writes(zk, path, (_entries(zk, path) or set()) | {READER})
        return original(data)

    monkeypatch.setattr(acl_sync, "read_entries", read_then_race)
    publication.sync_acl_resource(zk, TOPIC)
    assert len(calls) == 2
    assert _entries(zk, path) == {WRITER, READER} | ({OPS} if wire_first else set())
    assert Acl.objects.filter(principal__name="reader").exists()


def test_tenants_may_not_be_allowed_the_clusters_broker_configs(make_tenant: Any) -> None:
    from django.core.exceptions import ValidationError

    acme = make_tenant("acme")
    app = services.create_principal(None, acme, name="app")
    for operation in ("AlterConfigs", "All"):
        with pytest.raises(ValidationError, match="operators"):
            services.grant_acl(None, acme, principal=app, resource_type="Cluster",
                               resource_name="kafka-cluster", operation=operation)
    services.grant_acl(None, acme, principal=app, resource_type="Cluster",
                       resource_name="kafka-cluster", operation="Alter")  # its own ACLs
