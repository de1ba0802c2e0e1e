"""REST API behaviour that needs no ZooKeeper: access rules, validation, audit, secrets."""

from __future__ import annotations

import pytest
from django.contrib.auth.hashers import check_password

from tenants.models import ApiKey, AuditEvent, Topic

pytestmark = pytest.mark.django_db


def test_schema_and_docs_are_served(client) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/api/schema/").status_code == 200
    assert client.get("/api/docs/").status_code == 200


def test_api_requires_authentication(client) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/api/v1/tenants/").status_code in (401, 403)


def test_operator_creates_tenant_and_audit_row(operator_api, plan) -> None:  # type: ignore[no-untyped-def]
    response = operator_api.post("/api/v1/tenants/", {"slug": "acme", "name": "Acme", "plan": "basic"},
                                 format="json")
    assert response.status_code == 201, response.content
    assert response.json()["slug"] == "acme"
    assert AuditEvent.objects.filter(action="tenant.create", target="acme").count() == 1


@pytest.mark.parametrize("payload, field", [
    ({"slug": "Bad.Slug", "name": "x", "plan": "basic"}, "slug"),
    ({"slug": "ok", "name": "x", "plan": "nope"}, "plan"),
    ({"slug": "ok", "plan": "basic"}, "name"),
])
def test_bad_tenant_payload_gets_field_errors_and_changes_nothing(  # type: ignore[no-untyped-def]
        operator_api, plan, payload, field) -> None:
    response = operator_api.post("/api/v1/tenants/", payload, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not AuditEvent.objects.exists()


def test_tenant_admin_sees_only_its_tenant(make_tenant, admin_api) -> None:  # type: ignore[no-untyped-def]
    acme, globex = make_tenant("acme"), make_tenant("globex")
    api = admin_api(acme)
    assert [t["slug"] for t in api.get("/api/v1/tenants/").json()["results"]] == ["acme"]
    assert api.get("/api/v1/tenants/globex/").status_code == 404
    assert api.get("/api/v1/tenants/globex/topics/").status_code == 404
    assert api.post("/api/v1/tenants/globex/topics/", {"name": "t", "partitions": 1},
                    format="json").status_code == 404
    assert api.post("/api/v1/tenants/", {"slug": "x", "name": "x", "plan": "basic"},
                    format="json").status_code == 403
    assert not Topic.objects.filter(tenant=globex).exists()


def test_api_key_secret_shown_once_and_stored_hashed(make_tenant, admin_api) -> None:  # type: ignore[no-untyped-def]
    tenant = make_tenant("acme")
    api = admin_api(tenant)
    assert api.post("/api/v1/tenants/acme/principals/", {"name": "billing-svc"},
                    format="json").status_code == 201
    created = api.post("/api/v1/tenants/acme/api-keys/", {"principal": "billing-svc"}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    stored = ApiKey.objects.get(key=body["key"])
    assert body["secret"] not in (stored.secret_hash, stored.scram_sha_256, stored.scram_sha_512)
    assert check_password(body["secret"], stored.secret_hash)
    listed = api.get(f"/api/v1/tenants/acme/api-keys/{body['key']}/").json()
    assert "secret" not in listed and listed["principal"] == "billing-svc"


def test_api_key_for_unknown_principal_is_404(make_tenant, admin_api) -> None:  # type: ignore[no-untyped-def]
    api = admin_api(make_tenant("acme"))
    assert api.post("/api/v1/tenants/acme/api-keys/", {"principal": "ghost"},
                    format="json").status_code == 404


def test_topic_validation(make_tenant, admin_api) -> None:  # type: ignore[no-untyped-def]
    api = admin_api(make_tenant("acme"))
    bad = api.post("/api/v1/tenants/acme/topics/",
                   {"name": "__internal", "partitions": 0, "configs": {"retention.ms": "soon",
                                                                      "x.y": "1"}}, format="json")
    assert bad.status_code == 400
    errors = bad.json()
    assert {"name", "partitions", "configs"} <= errors.keys()
    assert {"retention.ms", "x.y"} <= errors["configs"].keys()
    too_many = api.post("/api/v1/tenants/acme/topics/", {"name": "big", "partitions": 21},
                        format="json")
    assert too_many.status_code == 400 and "partitions" in too_many.json()
    assert not Topic.objects.exists()


def test_the_plan_decides_a_tenants_replication_factor(  # type: ignore[no-untyped-def]
        make_tenant, admin_api, operator_api) -> None:
    tenant = make_tenant("acme")
    tenant.plan.replication_factor = 3
    tenant.plan.save()
    api = admin_api(tenant)
    refused = api.post("/api/v1/tenants/acme/topics/",
                       {"name": "fragile", "partitions": 1, "replication_factor": 1}, format="json")
    assert refused.status_code == 400
    assert "topics have replication factor 3" in str(refused.json()["replication_factor"])
    assert api.post("/api/v1/tenants/acme/topics/", {"name": "orders", "partitions": 1},
                    format="json").status_code == 201
    assert Topic.objects.get(name="orders").replication_factor == 3
    # Operators keep full control.
    assert operator_api.post("/api/v1/tenants/acme/topics/", {
        "name": "scratch", "partitions": 1, "replication_factor": 1},
        format="json").status_code == 201
    assert Topic.objects.get(name="scratch").replication_factor == 1


def test_quota_validation(make_tenant, admin_api) -> None:  # type: ignore[no-untyped-def]
    api = admin_api(make_tenant("acme"))
    api.post("/api/v1/tenants/acme/principals/", {"name": "svc"}, format="json")
    empty = api.post("/api/v1/tenants/acme/quotas/", {"principal": "svc"}, format="json")
    assert empty.status_code == 400
    negative = api.post("/api/v1/tenants/acme/quotas/",
                        {"principal": "svc", "producer_byte_rate": -5}, format="json")
    assert negative.status_code == 400 and "producer_byte_rate" in negative.json()


def test_cluster_quotas_are_operator_only(make_tenant, admin_api, operator_api) -> None:  # type: ignore[no-untyped-def]
    api = admin_api(make_tenant("acme"))
    assert api.get("/api/v1/quotas/").status_code == 403
    created = operator_api.post("/api/v1/quotas/", {"default_user": True, "consumer_byte_rate": 5000},
                                format="json")
    assert created.status_code == 201, created.content
    assert created.json()["entity_path"] == "users/<default>"


def test_acl_validation_and_isolation(make_tenant, admin_api) -> None:  # type: ignore[no-untyped-def]
    acme, _ = make_tenant("acme"), make_tenant("globex")
    api = admin_api(acme)
    api.post("/api/v1/tenants/acme/principals/", {"name": "svc"}, format="json")
    rule = {"principal": "svc", "resource_type": "Topic", "resource_name": "orders", "operation": "Read"}
    assert api.post("/api/v1/tenants/acme/acls/", rule, format="json").status_code == 201
    assert api.post("/api/v1/tenants/acme/acls/", rule, format="json").status_code == 400  # duplicate
    bad_op = api.post("/api/v1/tenants/acme/acls/", {**rule, "operation": "Steal"}, format="json")
    assert bad_op.status_code == 400 and "operation" in bad_op.json()
    bad_cluster = api.post("/api/v1/tenants/acme/acls/",
                           {**rule, "resource_type": "Cluster", "resource_name": "x"}, format="json")
    assert bad_cluster.status_code == 400 and "resource_name" in bad_cluster.json()
    assert api.post("/api/v1/tenants/globex/acls/", rule, format="json").status_code == 404
