"""Tenant pages with Django's test client: each page renders, each write goes through its
service (audited), and another tenant's admin gets 404 for every page and every write."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from quotas.services import set_quota
from tenants import services
from tenants.models import Acl, ApiKey, AuditEvent, ClientId, Principal, Tenant, Topic

pytestmark = pytest.mark.django_db


def audited(action: str) -> bool:
    return AuditEvent.objects.filter(action=action).exists()


def test_home_lists_a_tenant_admin_its_own_tenant_and_an_operator_all(
        acme: Tenant, globex: Tenant, admin_client_for: Callable[[Tenant], Client],
        operator_client: Client) -> None:
    own = admin_client_for(acme).get("/").content.decode()
    assert "/t/acme/topics/" in own and "Globex" not in own and "/t/globex/" not in own
    every = operator_client.get("/").content.decode()
    assert "/t/acme/topics/" in every and "/t/globex/topics/" in every


def test_pages_need_a_signed_in_user(acme: Tenant) -> None:
    response = Client().get("/t/acme/topics/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_create_list_and_delete_a_topic(acme: Tenant, admin_client_for) -> None:  # type: ignore[no-untyped-def]
    client = admin_client_for(acme)
    response = client.post("/t/acme/topics/", {
        "name": "orders", "partitions": 3, "replication_factor": 1, "retention_hours": 24,
        "cleanup_policy": "compact"})
    assert response.status_code == 302
    topic = Topic.objects.get(tenant=acme, name="orders")
    assert (topic.partitions, topic.replication_factor) == (3, 1)
    assert topic.configs == {"cleanup.policy": "compact", "retention.ms": "86400000"}
    assert audited("topic.create")
    page = client.get("/t/acme/topics/").content.decode()
    assert "orders" in page and "1 d" in page and "compact" in page

    confirm = client.get("/t/acme/topics/orders/delete/")
    assert b"Type" in confirm.content
    assert client.post("/t/acme/topics/orders/delete/", {"confirm": "wrong"}).status_code == 200
    assert Topic.objects.filter(name="orders").exists()
    assert client.post("/t/acme/topics/orders/delete/", {"confirm": "orders"}).status_code == 302
    assert not Topic.objects.filter(name="orders").exists() and audited("topic.delete")


def test_topic_errors_from_the_service_are_shown_on_the_form(acme: Tenant, admin_client_for) -> None:  # type: ignore[no-untyped-def]
    client = admin_client_for(acme)
    response = client.post("/t/acme/topics/", {"name": "big", "partitions": 50,
                                               "retention_hours": -1, "cleanup_policy": "delete"})
    assert response.status_code == 200
    assert b"allows 20 partitions" in response.content
    assert not Topic.objects.filter(name="big").exists()


def test_api_key_secret_is_shown_once_with_client_settings(acme: Tenant, admin_client_for,  # type: ignore[no-untyped-def]
                                                             settings) -> None:
    settings.BOOTSTRAP_SERVERS = "kafka.example:9292"
    client = admin_client_for(acme)
    assert client.post("/t/acme/api-keys/", {"create_account": "1", "name": "orders-app"}).status_code == 302
    response = client.post("/t/acme/api-keys/", {"create_key": "1", "principal": "orders-app",
                                                 "description": "prod"}, follow=True)
    assert response.redirect_chain == [("/t/acme/api-keys/", 302)]  # post/redirect/get
    key = ApiKey.objects.get(principal__name="orders-app")
    page = response.content.decode()
    secret = page.split('id="new-key-secret">')[1].split("<")[0]
    assert len(secret) >= 40 and key.secret_hash != secret
    for fragment in ("kafka.example:9292", "SCRAM-SHA-512", "SASL_SSL", key.key,
                     "sasl_plain_username", "kcat -b"):
        assert fragment in page
    later = client.get("/t/acme/api-keys/").content.decode()  # a reload: a GET, no new key
    assert key.key in later and secret not in later  # never shown again
    assert ApiKey.objects.count() == 1
    assert client.post(f"/t/acme/api-keys/{key.key}/revoke/").status_code == 302
    assert not ApiKey.objects.exists() and audited("api_key.revoke")


def test_grant_and_revoke_an_acl(acme: Tenant, admin_client_for) -> None:  # type: ignore[no-untyped-def]
    client = admin_client_for(acme)
    services.create_principal(None, acme, name="app")
    response = client.post("/t/acme/acls/", {"principal": "app", "operation": "Read",
                                             "resource_type": "Topic", "pattern_type": "PREFIXED",
                                             "resource_name": "orders"})
    assert response.status_code == 302
    acl = Acl.objects.get(principal__name="app")
    assert (acl.operation, acl.pattern_type, acl.resource_name) == ("Read", "PREFIXED", "orders")
    assert "orders" in client.get("/t/acme/acls/").content.decode()
    assert client.post(f"/t/acme/acls/{acl.pk}/revoke/").status_code == 302
    assert not Acl.objects.exists() and audited("acl.revoke")


def test_register_and_remove_a_client_id(acme: Tenant, admin_client_for) -> None:  # type: ignore[no-untyped-def]
    client = admin_client_for(acme)
    assert client.post("/t/acme/client-ids/", {"client_id": "billing-1"}).status_code == 302
    entry = ClientId.objects.get(tenant=acme)
    assert "billing-1" in client.get("/t/acme/client-ids/").content.decode()
    duplicate = client.post("/t/acme/client-ids/", {"client_id": "billing-1"})
    assert duplicate.status_code == 200 and ClientId.objects.count() == 1
    assert client.post(f"/t/acme/client-ids/{entry.pk}/delete/").status_code == 302
    assert not ClientId.objects.exists()


def test_quotas_show_the_plan_defaults_and_overrides(acme: Tenant, admin_client_for) -> None:  # type: ignore[no-untyped-def]
    client = admin_client_for(acme)
    app = services.create_principal(None, acme, name="app")
    set_quota(None, tenant=acme, principal=app, producer_byte_rate=5 * 1024)
    services.register_client_id(None, acme, client_id="batch")
    set_quota(None, tenant=acme, principal=app, client_id="batch", consumer_byte_rate=3 * 1024)
    page = client.get("/t/acme/quotas/").content.decode()
    assert "1 MiB/s" in page and "2 MiB/s" in page  # the plan's produce / consume defaults
    assert "users/acme.app" in page and "5 KiB/s" in page
    effective = page.split('id="effective"')[1].split("</table>")[0]
    rows = effective.split("<tr>")[2:]
    assert "batch" in rows[1] and "3 KiB/s <small>users/acme.app/clients/batch" in rows[1]
    assert "5 KiB/s <small>users/acme.app<" in rows[0]  # any other client id: the user level
    assert "2 MiB/s <small>plan" in rows[0] and "unlimited" in rows[0]


def test_set_change_and_remove_a_quota_override_in_the_console(acme: Tenant, admin_client_for) -> None:  # type: ignore[no-untyped-def]
    from quotas.models import QuotaOverride

    client = admin_client_for(acme)
    services.create_principal(None, acme, name="app")
    services.register_client_id(None, acme, client_id="batch")
    response = client.post("/t/acme/quotas/", {"principal": "app", "producer_byte_rate": "5120"})
    assert response.status_code == 302 and audited("quota.set")
    override = QuotaOverride.objects.get(tenant=acme)
    assert (override.entity_path, override.producer_byte_rate) == ("users/acme.app", 5120)
    row = client.get("/t/acme/quotas/").content.decode().split('data-entity="users/acme.app"')[1]
    row = row.split("</tr>")[0]
    assert "5 KiB/s" in row and "plan default: 2 MiB/s" in row  # consume: the plan's value
    assert "plan default: unlimited" in row and "<td>unlimited</td>" not in row  # request time
    edit = client.get(f"/t/acme/quotas/?edit={override.pk}").content.decode()
    assert 'name="producer_byte_rate" value="5120"' in edit
    client.post("/t/acme/quotas/", {"principal": "app", "consumer_byte_rate": "1024"})
    override.refresh_from_db()
    assert (override.producer_byte_rate, override.consumer_byte_rate) == (None, 1024)  # replaced
    client.post("/t/acme/quotas/", {"principal": "app", "client_id": "batch",
                                    "request_percentage": "25"})
    assert QuotaOverride.objects.filter(entity_path="users/acme.app/clients/batch").exists()
    refused = client.post("/t/acme/quotas/", {"principal": "app"})  # no rate at all
    assert refused.status_code == 200 and "set at least one" in refused.content.decode()
    assert client.post(f"/t/acme/quotas/{override.pk}/delete/").status_code == 302
    assert not QuotaOverride.objects.filter(pk=override.pk).exists() and audited("quota.delete")


def test_another_tenants_admin_gets_404_everywhere(acme: Tenant, globex: Tenant,  # type: ignore[no-untyped-def]
                                                   admin_client_for) -> None:
    outsider = admin_client_for(globex)
    app = services.create_principal(None, acme, name="app", kind=Principal.SERVICE_ACCOUNT)
    services.create_topic(None, acme, name="orders", partitions=1, replication_factor=1)
    key, _ = services.create_api_key(None, app)
    acl = services.grant_acl(None, acme, principal=app, resource_type="Topic",
                             resource_name="orders", operation="Read")
    entry = services.register_client_id(None, acme, client_id="c1")
    for page in ("", "topics/", "topics/orders/delete/", "api-keys/", "acls/", "client-ids/",
                 "quotas/", "consumer-groups/"):
        assert outsider.get(f"/t/acme/{page}").status_code == 404, page
    for write, data in (("topics/", {"name": "x", "partitions": 1, "retention_hours": 1,
                                     "cleanup_policy": "delete"}),
                        ("topics/orders/delete/", {"confirm": "orders"}),
                        (f"api-keys/{key.key}/revoke/", {}), (f"acls/{acl.pk}/revoke/", {}),
                        (f"client-ids/{entry.pk}/delete/", {}),
                        ("api-keys/", {"create_account": "1", "name": "evil"})):
        assert outsider.post(f"/t/acme/{write}", data).status_code == 404, write
    # nor can it reach acme's objects through its own tenant's URLs
    assert outsider.post(f"/t/globex/api-keys/{key.key}/revoke/").status_code == 404
    assert outsider.post(f"/t/globex/acls/{acl.pk}/revoke/").status_code == 404
    assert Topic.objects.filter(tenant=acme).count() == 1 and ApiKey.objects.count() == 1
    assert Acl.objects.count() == 1 and ClientId.objects.count() == 1
    assert not Principal.objects.filter(name="evil").exists()
    for page in ("/ops/tenants/", "/ops/brokers/"):
        assert outsider.get(page).status_code == 404


def test_lists_search_and_page(acme: Tenant, admin_client_for) -> None:  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    from dashboard.models import ConsumerGroupLag

    client = admin_client_for(acme)
    for i in range(30):
        services.register_client_id(None, acme, client_id=f"app-{i:02d}")
        ConsumerGroupLag.objects.create(tenant=acme, group=f"group-{i:02d}", state="EMPTY",
                                        status="OK", updated_at=datetime.now(UTC))
    first = client.get("/t/acme/client-ids/").content.decode()
    assert first.count("<code>app-") == 25 and "1–25 of 30" in first and "page=2" in first
    second = client.get("/t/acme/client-ids/?page=2").content.decode()
    assert second.count("<code>app-") == 5 and "app-29" in second and "app-00" not in second
    found = client.get("/t/acme/client-ids/?q=APP-1").content.decode()
    assert found.count("<code>app-") == 10 and "matching “APP-1”" in found
    groups = client.get("/t/acme/consumer-groups/?q=group&page=2").content.decode()
    assert groups.count('<tr data-group="') == 5 and 'data-first="25"' in groups
    assert 'data-query="group"' in groups and "q=group&amp;page=1" in groups  # links keep q
    assert "No group matches" in client.get("/t/acme/consumer-groups/?q=nothing").content.decode()
