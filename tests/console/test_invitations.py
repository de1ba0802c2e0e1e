"""Invitations and roles: operators invite tenant admins, admins invite colleagues (admin or
read-only) from the console and the REST API; the one-time link sets a password and signs in;
read-only users see everything of their tenant and change nothing (console 403, API 403)."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.test import Client

from tenants import services
from tenants.models import ApiKey, AuditEvent, Principal, Tenant, Topic

pytestmark = pytest.mark.django_db


def link_in(message: str) -> str:
    found = re.search(r"http://testserver(/invite/[^\s]+/)", message)
    assert found is not None, f"no invitation link in {message!r}"
    return found.group(1)


def accept(link: str, password: str = "a-long-passphrase-42") -> Client:
    """Open the one-time link signed out, set a password; the client is then signed in."""
    client = Client()
    form_page = client.get(link, follow=True)  # Django moves the token into the session
    assert "Set password" in form_page.content.decode()
    done = client.post(form_page.redirect_chain[-1][0],
                       {"new_password1": password, "new_password2": password})
    assert done.status_code == 302 and done["Location"] == "/"
    return client


def test_operator_invites_a_tenant_admin_who_signs_in_with_the_one_time_link(
        acme: Tenant, operator_client: Client, settings,  # type: ignore[no-untyped-def]
        django_capture_on_commit_callbacks) -> None:
    settings.SHOW_INVITATION_LINKS = True
    with django_capture_on_commit_callbacks(execute=True):  # the e-mail leaves after commit
        response = operator_client.post("/t/acme/team/", {"email": "Ann@Example.com", "role": "admin"})
    assert response.status_code == 302 and response["Location"] == "/t/acme/team/"  # PRG
    principal = Principal.objects.get(tenant=acme, kind=Principal.USER, user__email="ann@example.com")
    assert principal.user is not None
    assert principal.role == Principal.ADMIN and not principal.user.has_usable_password()
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["ann@example.com"]
    link = link_in(str(mail.outbox[0].body))
    page = operator_client.get("/t/acme/team/").content.decode()
    assert link in page and "invited, no password yet" in page  # shown once, in development
    assert link not in operator_client.get("/t/acme/team/").content.decode()
    assert AuditEvent.objects.filter(action="user.invite", target="ann@example.com").exists()

    ann = accept(link)
    assert "/t/acme/topics/" in ann.get("/").content.decode()
    assert ann.post("/t/acme/client-ids/", {"client_id": "x"}).status_code == 302  # an admin
    again = Client().get(link, follow=True).content.decode()
    assert "no longer works" in again  # one-time
    assert Client().login(username="ann@example.com", password="a-long-passphrase-42")


def test_a_read_only_colleague_sees_and_changes_nothing(acme: Tenant, globex: Tenant,  # type: ignore[no-untyped-def]
                                                       admin_client_for,
                                                       django_capture_on_commit_callbacks) -> None:
    admin = admin_client_for(acme)
    with django_capture_on_commit_callbacks(execute=True):
        invited = admin.post("/t/acme/team/", {"email": "bob@example.com", "role": "read_only"})
    assert invited.status_code == 302
    bob = accept(link_in(str(mail.outbox[0].body)))
    services.create_topic(None, acme, name="orders", partitions=1)
    app = services.create_principal(None, acme, name="app")
    key, _ = services.create_api_key(None, app)
    for page in ("topics/", "api-keys/", "acls/", "quotas/", "team/", "consumer-groups/"):
        response = bob.get(f"/t/acme/{page}")
        assert response.status_code == 200, page
    assert 'id="read-only-badge"' in bob.get("/t/acme/topics/").content.decode()
    assert 'id="invite"' not in bob.get("/t/acme/team/").content.decode()
    for page, form in (("topics/", "create-topic"), ("api-keys/", "create-key"),
                       ("acls/", "grant-acl")):
        assert f'id="{form}"' not in bob.get(f"/t/acme/{page}").content.decode()  # not offered
        assert f'id="{form}"' in admin.get(f"/t/acme/{page}").content.decode()
    for path, data in (("topics/", {"name": "x", "partitions": 1, "retention_hours": 1,
                                    "cleanup_policy": "delete"}),
                       (f"api-keys/{key.key}/revoke/", {}), ("topics/orders/delete/", {"confirm": "orders"}),
                       ("team/", {"email": "eve@example.com", "role": "admin"}),
                       ("quotas/", {"principal": "app", "producer_byte_rate": 1})):
        refused = bob.post(f"/t/acme/{path}", data)
        assert refused.status_code == 403 and "read-only" in refused.content.decode(), path
    assert Topic.objects.filter(tenant=acme).count() == 1 and ApiKey.objects.count() == 1
    assert bob.post("/t/acme/topics/orders/messages/", {}).status_code == 200  # a read
    assert len(mail.outbox) == 1
    assert bob.get("/api/v1/tenants/acme/topics/").status_code == 200
    assert bob.post("/api/v1/tenants/acme/topics/", {"name": "y", "partitions": 1},
                    content_type="application/json").status_code == 403
    assert bob.delete(f"/api/v1/tenants/acme/api-keys/{key.key}/").status_code == 403
    assert bob.post("/api/v1/tenants/acme/invitations/", {"email": "eve@example.com", "role": "admin"},
                    content_type="application/json").status_code == 403
    assert bob.get("/t/globex/topics/").status_code == 404


def test_invite_over_rest(acme: Tenant, globex: Tenant, admin_client_for, settings) -> None:  # type: ignore[no-untyped-def]
    admin = admin_client_for(acme)
    settings.SHOW_INVITATION_LINKS = False
    created = admin.post("/api/v1/tenants/acme/invitations/",
                         {"email": "cat@example.com", "role": "read_only"}, content_type="application/json")
    assert created.status_code == 201 and "accept_url" not in created.json()
    assert created.json()["pending"] and created.json()["role"] == "read_only"
    settings.SHOW_INVITATION_LINKS = True
    created = admin.post("/api/v1/tenants/acme/invitations/",
                         {"email": "dan@example.com", "role": "admin"}, content_type="application/json")
    assert created.json()["accept_url"].startswith("http://testserver/invite/")
    listed = admin.get("/api/v1/tenants/acme/invitations/").json()["results"]
    by_email = {u["email"]: (u["role"], u["pending"]) for u in listed}
    assert by_email["cat@example.com"] == ("read_only", True)
    assert by_email["dan@example.com"] == ("admin", True)
    assert [u["role"] for u in listed if u["name"] == "admin-acme"] == ["admin"]  # signed in before
    duplicate = admin.post("/api/v1/tenants/acme/invitations/",
                           {"email": "dan@example.com", "role": "admin"}, content_type="application/json")
    assert duplicate.status_code == 400
    bad_role = admin.post("/api/v1/tenants/acme/invitations/",
                          {"email": "eve@example.com", "role": "member"}, content_type="application/json")
    assert bad_role.status_code == 400
    assert admin_client_for(globex).post("/api/v1/tenants/acme/invitations/",
                                         {"email": "x@example.com", "role": "admin"},
                                         content_type="application/json").status_code == 404
