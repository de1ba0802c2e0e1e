"""Token authentication for automation and session sign-in for the console."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_issue_token_prints_a_working_token(operator, make_tenant, capsys) -> None:  # type: ignore[no-untyped-def]
    make_tenant("acme")
    call_command("issue_token", "op")
    token = capsys.readouterr().out.strip()
    assert len(token) == 40
    api = APIClient()
    assert api.get("/api/v1/tenants/").status_code in (401, 403)
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = api.get("/api/v1/tenants/")
    assert response.status_code == 200
    assert [t["slug"] for t in response.json()["results"]] == ["acme"]


def test_issue_token_for_unknown_user_fails() -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no user"):
        call_command("issue_token", "nobody")


def test_console_sign_in_shows_only_own_tenant(client, make_tenant, admin_api) -> None:  # type: ignore[no-untyped-def]
    acme, _ = make_tenant("acme"), make_tenant("globex")
    admin_api(acme)  # creates user admin-acme with password "pw"
    assert client.get("/").status_code == 302
    response = client.post("/login/", {"username": "admin-acme", "password": "pw"})
    assert response.status_code == 302
    page = client.get("/").content.decode()
    assert "Acme" in page and "Globex" not in page
