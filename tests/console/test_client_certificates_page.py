"""The console's client-certificate page: issue for a service account (certificate and key
shown once), revoke (audited, the row marked), read-only users and other tenants kept out."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.test import Client

from tenants import services
from tenants.models import AuditEvent, ClientCertificate, Tenant
from tests.integration.secure.secure_cluster import make_certs

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_certs(tmp_path_factory.mktemp("ca"))


def test_issue_shows_the_key_once_then_revoke(  # type: ignore[no-untyped-def]
        acme: Tenant, admin_client_for: Callable[[Tenant], Client], settings, ca: Path) -> None:
    settings.SSL_CA_LOCATION, settings.SSL_CA_KEY_LOCATION = str(ca / "ca.pem"), str(ca / "ca.key")
    settings.MTLS_BOOTSTRAP_SERVERS = "127.0.0.1:9392"
    services.create_principal(None, acme, name="orders")
    client = admin_client_for(acme)
    response = client.post("/t/acme/client-certificates/", {"principal": "orders"})
    assert response.status_code == 302
    page = client.get("/t/acme/client-certificates/").content.decode()
    certificate = ClientCertificate.objects.get(principal__name="orders")
    assert certificate.subject == "CN=acme.orders" and certificate.serial in page
    assert "PRIVATE KEY" in page and "-X security.protocol=SSL" in page and "127.0.0.1:9392" in page
    again = client.get("/t/acme/client-certificates/").content.decode()
    assert "PRIVATE KEY" not in again and certificate.serial in again  # shown once
    assert client.post(f"/t/acme/client-certificates/{certificate.serial}/revoke/").status_code == 302
    certificate.refresh_from_db()
    assert certificate.revoked_at is not None
    assert AuditEvent.objects.filter(action="client_certificate.revoke").exists()
    assert "revoked" in client.get("/t/acme/client-certificates/").content.decode()


def test_without_a_ca_the_page_says_so_and_other_tenants_get_404(  # type: ignore[no-untyped-def]
        acme: Tenant, globex: Tenant, admin_client_for: Callable[[Tenant], Client], settings) -> None:
    settings.SSL_CA_LOCATION, settings.SSL_CA_KEY_LOCATION = "", ""
    page = admin_client_for(acme).get("/t/acme/client-certificates/").content.decode()
    assert "no CA to sign client certificates" in page
    assert admin_client_for(globex).get("/t/acme/client-certificates/").status_code == 404
