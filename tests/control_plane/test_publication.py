"""REST writes reach ZooKeeper through a real Celery worker on real Redis, in Kafka's formats."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from tenants.zookeeper import client

from .conftest import wait_for

pytestmark = pytest.mark.integration


def _json(zk, path):  # type: ignore[no-untyped-def]
    return json.loads(zk.get(path)[0]) if zk.exists(path) else None


def _notifications(zk) -> list[str]:  # type: ignore[no-untyped-def]
    if not zk.exists("/config/changes"):
        return []
    return [_json(zk, f"/config/changes/{c}")["entity_path"]
            for c in sorted(zk.get_children("/config/changes"))]


@pytest.fixture
def acme_api(publishing, make_tenant, admin_api):  # type: ignore[no-untyped-def]
    api = admin_api(make_tenant("acme"))
    assert api.post("/api/v1/tenants/acme/principals/", {"name": "orders"},
                    format="json").status_code == 201
    return api


def test_tenant_key_and_quota_are_published_with_notifications(acme_api, zk) -> None:  # type: ignore[no-untyped-def]
    tenant = wait_for(lambda: _json(zk, "/tenants/acme"))
    assert tenant["plan"] == "basic" and tenant["quota_defaults"] == {
        "producer_byte_rate": "1048576", "consumer_byte_rate": "2097152"}

    key = acme_api.post("/api/v1/tenants/acme/api-keys/", {"principal": "orders"},
                        format="json").json()
    user = wait_for(lambda: _json(zk, f"/config/users/{key['key']}"))
    assert user["version"] == 1
    assert user["config"]["principal"] == "acme.orders" and user["config"]["tenant"] == "acme"
    assert user["config"]["SCRAM-SHA-512"].startswith("salt=")
    assert key["secret"] not in json.dumps(user)

    quota = acme_api.post("/api/v1/tenants/acme/quotas/",
                          {"principal": "orders", "client_id": "app-1", "producer_byte_rate": 1024},
                          format="json")
    assert quota.status_code == 201, quota.content
    path = "/config/users/acme.orders/clients/app-1"
    assert wait_for(lambda: _json(zk, path)) == {"version": 1, "config": {"producer_byte_rate": "1024"}}
    wait_for(lambda: "users/acme.orders/clients/app-1" in _notifications(zk))
    assert f"users/{key['key']}" in _notifications(zk)

    assert acme_api.delete(f"/api/v1/tenants/acme/api-keys/{key['key']}/").status_code == 204
    wait_for(lambda: not zk.exists(f"/config/users/{key['key']}"))
    wait_for(lambda: _notifications(zk).count(f"users/{key['key']}") == 2)


def test_zk_sync_repairs_drift(acme_api, zk, publishing, capsys) -> None:  # type: ignore[no-untyped-def]
    key = acme_api.post("/api/v1/tenants/acme/api-keys/", {"principal": "orders"},
                        format="json").json()["key"]
    wait_for(lambda: zk.exists(f"/config/users/{key}") and zk.exists("/tenants/acme"))
    published = zk.get(f"/config/users/{key}")[0]
    zk.delete(f"/config/users/{key}")
    zk.delete("/tenants/acme")
    zk.create("/config/users/STALEKEY", b'{"version":1,"config":{"principal":"x.y"}}', makepath=True)

    call_command("zk_sync", zookeeper=publishing)
    out = capsys.readouterr().out
    assert f"wrote /config/users/{key}" in out and "wrote /tenants/acme" in out
    assert "removed /config/users/STALEKEY" in out
    assert zk.get(f"/config/users/{key}")[0] == published
    assert not zk.exists("/config/users/STALEKEY")

    call_command("zk_sync", zookeeper=publishing)
    assert "zk_sync: 0 change(s)" in capsys.readouterr().out
    client(publishing)  # the command's client stays usable for later tasks


def test_acls_are_published_in_kafka_format(acme_api, zk) -> None:  # type: ignore[no-untyped-def]
    granted = acme_api.post("/api/v1/tenants/acme/acls/",
                            {"principal": "orders", "resource_type": "Topic", "pattern_type": "PREFIXED",
                             "resource_name": "orders-", "operation": "Write"}, format="json")
    assert granted.status_code == 201, granted.content
    path = "/acls/prefixed/Topic/acme.orders-"
    assert wait_for(lambda: _json(zk, path)) == {"version": 1, "acls": [
        {"principal": "User:acme.orders", "permissionType": "Allow", "operation": "Write", "host": "*"}]}
    notification = {"version": 1, "resourceType": "Topic", "name": "acme.orders-", "patternType": "PREFIXED"}
    wait_for(lambda: zk.exists("/acls/changes") and notification in [
        _json(zk, f"/acls/changes/{c}") for c in zk.get_children("/acls/changes")])

    assert acme_api.delete(f"/api/v1/tenants/acme/acls/{granted.json()['id']}/").status_code == 204
    wait_for(lambda: not zk.exists(path))


def test_quota_overrides_leave_zookeeper_with_their_principal(acme_api, operator_api, zk) -> None:  # type: ignore[no-untyped-def]
    """``tenants`` does not know overrides exist; their own post_delete receiver withdraws them."""
    for client_id in ("app-1", "app-2"):
        assert acme_api.post("/api/v1/tenants/acme/quotas/",
                             {"principal": "orders", "client_id": client_id, "producer_byte_rate": 1024},
                             format="json").status_code == 201
    paths = ["/config/users/acme.orders/clients/app-1", "/config/users/acme.orders/clients/app-2"]
    wait_for(lambda: all(zk.exists(p) for p in paths))

    override = acme_api.get("/api/v1/tenants/acme/quotas/").json()["results"][0]
    assert acme_api.delete(f"/api/v1/tenants/acme/quotas/{override['id']}/").status_code == 204
    wait_for(lambda: not zk.exists(f"/config/{override['entity_path']}"))

    assert acme_api.delete("/api/v1/tenants/acme/principals/orders/").status_code == 204
    wait_for(lambda: not any(zk.exists(p) for p in paths))
    assert "users/acme.orders/clients/app-2" in _notifications(zk)


def test_a_publication_task_that_gives_up_is_audited_under_its_tenant(db, make_tenant) -> None:  # type: ignore[no-untyped-def]
    """After its last retry Celery calls ``on_failure``; the audit log then says what never
    reached the brokers, and why (the first failure is audited by ``on_retry``, live tests)."""
    from tenants import tasks
    from tenants.kafka_admin import KafkaRequestFailed
    from tenants.models import AuditEvent

    tenant = make_tenant("acme")
    error = KafkaRequestFailed("create topic acme.orders: INVALID_CONFIG: retention.ms is not a number")
    tasks.publish_topic.on_failure(error, "task-id", ("acme.orders",), {}, None)
    event = AuditEvent.objects.get(action="publication.failed")
    assert event.tenant == tenant and event.target == "publish_topic('acme.orders')"
    assert "INVALID_CONFIG" in event.details["error"]
