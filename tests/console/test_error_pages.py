"""Error pages are the console's own (DEBUG off, as `make run` runs), and a cluster that does
not answer is a 503 saying so, not a 500."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime

import pytest
from django.test import Client

from dashboard.models import ConsumerGroupLag
from dashboard.views import groups
from tenants.kafka_admin import KafkaRequestFailed
from tenants.models import Tenant

pytestmark = pytest.mark.django_db
DEBUG_PAGE_MARKERS = ("DEBUG = True", "URLconf", "Traceback", "technical_500", "Request Method:")


def console_page(body: str) -> bool:
    return 'class="brand"' in body and not any(marker in body for marker in DEBUG_PAGE_MARKERS)


def test_make_run_settings_have_debug_off() -> None:
    dev = importlib.import_module("service.settings.dev")
    assert dev.DEBUG is False
    assert "whitenoise.middleware.WhiteNoiseMiddleware" in dev.MIDDLEWARE and dev.WHITENOISE_USE_FINDERS


@pytest.fixture
def billing(acme: Tenant) -> ConsumerGroupLag:
    return ConsumerGroupLag.objects.create(tenant=acme, group="billing", state="EMPTY", status="OK",
                                           updated_at=datetime.now(UTC), lag={"partitions": []})


def test_not_found_and_another_tenant_are_the_consoles_404(acme: Tenant, globex: Tenant,
                                                           admin_client_for) -> None:  # type: ignore[no-untyped-def]
    client = admin_client_for(globex)
    for path in ("/no/such/page/", "/t/acme/topics/", "/t/globex/consumer-groups/nope/"):
        response = client.get(path)
        assert response.status_code == 404 and console_page(response.content.decode()), path
        assert "Not found" in response.content.decode()


def test_a_failing_view_is_the_consoles_500(billing, acme, admin_client_for, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def broken(*args: object) -> None:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(groups, "lag_history", broken)
    client = admin_client_for(acme)
    client.raise_request_exception = False
    response = client.get("/t/acme/consumer-groups/billing/")
    body = response.content.decode()
    assert response.status_code == 500 and console_page(body) and "secret detail" not in body


def test_brokers_not_answering_is_a_503_with_a_clear_message(billing, acme, admin_client_for,  # type: ignore[no-untyped-def]
                                                             monkeypatch) -> None:
    def timeout(*args: object) -> None:
        raise KafkaRequestFailed("list offsets: no answer within 5 s")

    monkeypatch.setattr(groups, "lag_history", timeout)
    response = admin_client_for(acme).get("/t/acme/consumer-groups/billing/")
    body = response.content.decode()
    assert response.status_code == 503 and console_page(body)
    assert "did not answer in time" in body and "no answer within 5 s" in body


def test_an_expired_form_is_the_consoles_403(acme, admin_client_for) -> None:  # type: ignore[no-untyped-def]
    client = admin_client_for(acme)
    client.handler.enforce_csrf_checks = True
    response = client.post("/t/acme/client-ids/", {"client_id": "x"})
    assert response.status_code == 403 and console_page(response.content.decode())
    assert "expired" in response.content.decode()


def test_signed_out_pages_render_without_a_user(acme: Tenant) -> None:
    response = Client().get("/no/such/page/")
    assert response.status_code == 404 and console_page(response.content.decode())
