"""ACLs and SCRAM users made over Kafka meet the control plane, with real brokers and the
Celery worker: a tenant's CreateAcls appears in the REST API (and the console's rows), a
console revocation disappears from DescribeAcls, a console grant appears in DescribeAcls, a
DeleteAcls removes the row; an operator's AlterUserScramCredentials user logs in and is
listed for operators.  Celery beat's ``discover_acls`` runs as beat would
(``ACL_DISCOVERY_INTERVAL_S``)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from quotas.publication import sync_quota
from tenants import tasks
from tenants.models import AuditEvent
from tests.integration.brokerd.tenancy_fixtures import WATCH_PROPAGATION_S
from tests.support.confluent_admin import acl_filter, scram_descriptions

from .conftest import running_brokers, wait_for
from .test_topics_live import beat

pytestmark = pytest.mark.integration
ALLOW = AclPermissionType.ALLOW
ALL_TOPICS = acl_filter(ResourceType.TOPIC)


def _rules(api: Any) -> set[tuple[str, str, str, str, str]]:
    return {(a["principal"], a["resource_type"], a["pattern_type"], a["resource_name"],
             a["operation"]) for a in api.get("/api/v1/tenants/acme/acls/").json()["results"]}


def _described(client: AdminClient) -> set[tuple[str, str, str]]:
    return {(b.name, b.principal, b.operation.name)
            for b in client.describe_acls(ALL_TOPICS).result(15)}


def test_acls_made_over_kafka_and_in_the_console_meet(
        publishing, tmp_path, settings, zk, plan, make_tenant, admin_api) -> None:  # type: ignore[no-untyped-def]
    plan.acl_admin = True
    plan.save()
    with running_brokers(publishing, tmp_path, settings, {1: None}, sasl=True) as brokers:
        api = admin_api(make_tenant("acme"))
        base = "/api/v1/tenants/acme"
        assert api.post(f"{base}/principals/", {"name": "app"}, format="json").status_code == 201
        key = api.post(f"{base}/api-keys/", {"principal": "app"}, format="json").json()
        for operation in ("Alter", "Describe"):  # may manage the tenant's ACLs
            assert api.post(f"{base}/acls/", {
                "principal": "app", "resource_type": "Cluster", "pattern_type": "LITERAL",
                "resource_name": "kafka-cluster", "operation": operation},
                format="json").status_code == 201
        wait_for(lambda: zk.exists(f"/config/users/{key['key']}")
                 and zk.exists("/acls/literal/Cluster/kafka-cluster") and zk.exists("/tenants/acme"))
        time.sleep(WATCH_PROPAGATION_S)
        client = AdminClient({
            "bootstrap.servers": f"127.0.0.1:{brokers[0][1]}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": key["key"],
            "sasl.password": key["secret"]})
        assert settings.CELERY_BEAT_SCHEDULE["discover-acls"]["task"] == "tenants.tasks.discover_acls"

        with beat(tasks.discover_acls, settings.ACL_DISCOVERY_INTERVAL_S):
            # Kafka -> control plane: CreateAcls for a principal the tenant does not have yet
            [future] = client.create_acls([AclBinding(
                ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:reader", "*",
                AclOperation.READ, ALLOW)]).values()
            assert future.result(15) is None
            adopted = ("reader", "Topic", "LITERAL", "orders", "Read")
            wait_for(lambda: adopted in _rules(api), timeout=10)
            assert zk.exists("/acls/literal/Topic/acme.orders")
            # (reads and writes retry while the worker thread holds SQLite's table lock)
            wait_for(lambda: AuditEvent.objects.filter(action="acl.discover").exists())
            assert "reader" in wait_for(lambda: {
                p["name"] for p in api.get(f"{base}/principals/").json()["results"]})

            # control plane -> Kafka: a console revocation leaves DescribeAcls
            row = next(a for a in wait_for(lambda: api.get(f"{base}/acls/").json()["results"])
                       if a["principal"] == "reader")
            assert wait_for(lambda: api.delete(f"{base}/acls/{row['id']}/")).status_code == 204
            wait_for(lambda: ("orders", "User:reader", "READ") not in _described(client))
            # ... and a console grant appears in it, in the tenant's names
            assert wait_for(lambda: api.post(f"{base}/acls/", {
                "principal": "app", "resource_type": "Topic", "pattern_type": "PREFIXED",
                "resource_name": "logs-", "operation": "Write"}, format="json")).status_code == 201
            wait_for(lambda: ("logs-", "User:app", "WRITE") in _described(client))

            # Kafka -> control plane: DeleteAcls removes the row
            [future] = client.delete_acls([acl_filter(
                ResourceType.TOPIC, "logs-", ResourcePatternType.PREFIXED)]).values()
            assert [(b.name, b.principal) for b in future.result(15)] == [("logs-", "User:app")]
            wait_for(lambda: not any(r[3] == "logs-" for r in _rules(api)), timeout=10)
            wait_for(lambda: AuditEvent.objects.filter(action="acl.forget").exists())
            assert not zk.exists("/acls/prefixed/Topic/acme.logs-")
            # the tenant's cluster permissions came through untouched
            assert {r for r in wait_for(lambda: _rules(api)) if r[1] == "Cluster"} == {
                ("app", "Cluster", "LITERAL", "kafka-cluster", "Alter"),
                ("app", "Cluster", "LITERAL", "kafka-cluster", "Describe")}


def test_scram_users_made_over_kafka_log_in_and_are_listed(
        publishing, tmp_path, settings, zk, operator_api) -> None:  # type: ignore[no-untyped-def]
    with running_brokers(publishing, tmp_path, settings, {1: None}, sasl=True) as brokers:
        admin = AdminClient({"bootstrap.servers": brokers[0][0].bootstrap})
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
        [done] = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "ops-tool", info, b"tool-secret", b"some-salt")]).values()
        assert done.result(15) is None
        described = scram_descriptions(admin, ["ops-tool"])["ops-tool"].result(15)
        assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
            (ScramMechanism.SCRAM_SHA_512, 8192)]

        user = AdminClient({
            "bootstrap.servers": f"127.0.0.1:{brokers[0][1]}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "ops-tool",
            "sasl.password": "tool-secret"})
        assert user.list_topics(timeout=10).brokers  # logged in

        listed = operator_api.get("/api/v1/scram-users/")
        assert listed.status_code == 200
        assert listed.json() == [{"name": "ops-tool", "mechanisms": [
            {"mechanism": "SCRAM-SHA-512", "iterations": 8192}]}]
        sync_quota(zk, "users/ops-tool")  # no quota for the user: its credentials stay
        assert zk.exists("/config/users/ops-tool")

        [deleted] = admin.alter_user_scram_credentials([UserScramCredentialDeletion(
            "ops-tool", ScramMechanism.SCRAM_SHA_512)]).values()
        assert deleted.result(15) is None
        with pytest.raises(KafkaException, match="RESOURCE_NOT_FOUND|does not exist"):
            scram_descriptions(admin, ["ops-tool"])["ops-tool"].result(15)
        assert operator_api.get("/api/v1/scram-users/").json() == []
