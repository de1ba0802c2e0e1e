"""REST of the live cost meter and budgets: the estimate from the ledger, tenant scoping (404),
bad input (400 with field errors, nothing changed), and a budget's alerts and cap — quotas
lowered through the quota publication path, restored when the budget is raised."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.utils import timezone
from kazoo.exceptions import NoNodeError
from rest_framework.test import APIClient

from dashboard.budget_alerts import check_all
from dashboard.models import Alert
from quotas.cost_estimate import current_month
from quotas.models import Budget, MeteredStorageHour, MeteredTraffic
from tenants import services
from tenants.models import Principal, Tenant
from tests.control_plane.conftest import wait_for

GIB = 2**30
# 1 GB in costs 2.00, 1 GB out 3.00, a partition-hour 0.01: usage below is 4 GB in, 1 out.
PRICES = {"currency": "EUR",
          "data_in_gb": {"free": "0", "tiers": [{"up_to": None, "unit_price": "2"}]},
          "data_out_gb": {"free": "0", "tiers": [{"up_to": None, "unit_price": "3"}]},
          "partition_hours": {"free": "0", "tiers": [{"up_to": None, "unit_price": "0.01"}]}}


def meter(tenant: Tenant) -> None:
    """Ledger rows as the meter writes them, this month: 11.02 EUR in all."""
    month, today = current_month(timezone.now()), timezone.now().date()
    for principal, client, topic, bytes_in, bytes_out in [
            ("User:acme.orders", "api", "orders", 3 * GIB, 0),
            ("User:acme.orders", "batch", "audit", GIB, 0),
            ("User:acme.reader", "dash", "orders", 0, GIB)]:
        MeteredTraffic.objects.create(tenant=tenant, month=month, day=today, topic=topic,
                                      principal=principal, client_id=client,
                                      bytes_in=bytes_in, bytes_out=bytes_out)
    for partition in (0, 1):
        MeteredStorageHour.objects.create(tenant=tenant, month=month, day=today, topic="orders",
                                          partition=partition, hour_start_ms=0, stored_bytes=GIB)


@pytest.fixture
def acme(make_tenant, plan) -> Tenant:  # type: ignore[no-untyped-def]
    plan.prices = PRICES
    plan.save()
    tenant = make_tenant("acme")
    meter(tenant)
    return tenant


@pytest.mark.django_db
def test_cost_is_the_ledger_priced_and_broken_down(acme, admin_api) -> None:  # type: ignore[no-untyped-def]
    answer = admin_api(acme).get("/api/v1/tenants/acme/cost/")
    assert answer.status_code == 200, answer.content
    cost = answer.json()
    assert cost["month"] == current_month(timezone.now()) and cost["currency"] == "EUR"
    assert [(line["dimension"], line["usage"], line["amount"]) for line in cost["lines"]] == [
        ("data_in", 4 * GIB, "8.00"), ("data_out", GIB, "3.00"), ("storage", 2 * GIB, "0.00"),
        ("partition_hours", 2, "0.02")]
    assert cost["total"] == "11.02"
    assert Decimal(cost["projected_total"]) >= Decimal(cost["total"])
    topics = {row["name"]: (row["data_in"], row["amount"]) for row in cost["breakdown"]["topic"]}
    assert topics == {"audit": (GIB, "2.00"), "orders": (3 * GIB, "9.02")}
    principals = {row["name"]: row["amount"] for row in cost["breakdown"]["principal"]}
    assert principals == {"User:acme.orders": "8.00", "User:acme.reader": "3.00"}
    clients = {row["name"]: row["amount"] for row in cost["breakdown"]["client_id"]}
    assert clients == {"api": "6.00", "batch": "2.00", "dash": "3.00"}
    assert cost["daily"] == [{"day": timezone.now().date().isoformat(),
                              "data_in_gb": "4.000000", "data_out_gb": "1.000000",
                              "storage_gb_hours": "2.000000", "partition_hours": 2}]


@pytest.mark.django_db
def test_cost_and_budget_are_tenant_scoped_and_validate_input(  # type: ignore[no-untyped-def]
        acme, make_tenant, admin_api, django_user_model) -> None:
    other = admin_api(make_tenant("globex"))
    assert other.get("/api/v1/tenants/acme/cost/").status_code == 404
    assert other.get("/api/v1/tenants/acme/budget/").status_code == 404
    assert other.put("/api/v1/tenants/acme/budget/", {"amount": "5.00"},
                     format="json").status_code == 404
    assert not Budget.objects.exists()

    api = admin_api(acme)
    assert api.get("/api/v1/tenants/acme/cost/?month=2026-13").json() == {
        "month": ["expected YYYY-MM"]}
    assert api.get("/api/v1/tenants/acme/budget/").status_code == 404
    for body, field in [({}, "amount"), ({"amount": "-1"}, "amount"),
                        ({"amount": "abc"}, "amount"),
                        ({"amount": "10", "thresholds": [0, 50]}, "thresholds"),
                        ({"amount": "10", "thresholds": [80, 80]}, "thresholds"),
                        ({"amount": "10", "thresholds": "50"}, "thresholds"),
                        ({"amount": "10", "cap_byte_rate": 0}, "cap_byte_rate")]:
        answer = api.put("/api/v1/tenants/acme/budget/", body, format="json")
        assert answer.status_code == 400 and field in answer.json(), (body, answer.content)
    assert not Budget.objects.exists()

    assert api.put("/api/v1/tenants/acme/budget/", {"amount": "100.00"},
                   format="json").status_code == 200
    answer = api.put("/api/v1/tenants/acme/budget/", {"amount": "0"}, format="json")
    assert answer.status_code == 400 and "amount" in answer.json()
    budget = api.get("/api/v1/tenants/acme/budget/").json()
    assert (budget["amount"], budget["thresholds"], budget["cap_byte_rate"], budget["spend"],
            budget["percent_spent"]) == ("100.00", [50, 80, 100], None, "11.02", "11.0")
    assert other.delete("/api/v1/tenants/acme/budget/").status_code == 404
    assert Budget.objects.filter(tenant=acme).exists()

    # A read-only console user of the tenant sees the budget and may not change it.
    viewer = django_user_model.objects.create_user("viewer", password="pw")
    services.create_principal(None, acme, name="viewer", kind=Principal.USER,
                              role=Principal.READ_ONLY, user=viewer)
    reader = APIClient()
    reader.force_authenticate(viewer)
    assert reader.get("/api/v1/tenants/acme/budget/").json()["amount"] == "100.00"
    assert reader.put("/api/v1/tenants/acme/budget/", {"amount": "1.00"},
                      format="json").status_code == 403
    assert reader.delete("/api/v1/tenants/acme/budget/").status_code == 403
    assert Budget.objects.get(tenant=acme).amount == Decimal("100.00")


def test_budget_alerts_at_thresholds_and_its_cap_lowers_then_restores_quotas(  # type: ignore[no-untyped-def]
        publishing, make_tenant, plan, admin_api, zk) -> None:
    plan.prices = PRICES
    plan.save()
    acme = make_tenant("acme")
    api = admin_api(acme)
    for name in ("orders", "reader"):
        assert api.post("/api/v1/tenants/acme/principals/", {"name": name},
                        format="json").status_code == 201
    assert api.post("/api/v1/tenants/acme/quotas/", {"principal": "orders", "client_id": "api",
                    "producer_byte_rate": 500, "consumer_byte_rate": 4096},
                    format="json").status_code == 201
    meter(acme)

    # 11.02 of 12.00 spent: 50 and 80 % reached, not 100; no cap yet.
    answer = api.put("/api/v1/tenants/acme/budget/", {"amount": "12.00", "thresholds": [50, 80, 100],
                     "cap_byte_rate": 1024}, format="json")
    assert answer.status_code == 200 and answer.json()["capped"] is False
    check_all(timezone.now())
    check_all(timezone.now())  # deduplicated: still one alert per threshold
    assert sorted(Alert.objects.filter(resolved_at__isnull=True).values_list("key", flat=True)) == [
        "budget:50", "budget:80"]

    def config(path: str) -> dict | None:
        # One read, not exists-then-get: the node may be deleted between the two.
        try:
            return json.loads(zk.get(path)[0])["config"]
        except NoNodeError:
            return None

    # Budget lowered below the spend: the cap lowers every service account's byte rates.
    assert api.put("/api/v1/tenants/acme/budget/", {"amount": "10.00", "cap_byte_rate": 1024},
                   format="json").json()["capped"] is True
    check_all(timezone.now())
    assert Alert.objects.get(key="budget:100", resolved_at__isnull=True).details["capped"] is True
    capped = {"producer_byte_rate": "1024", "consumer_byte_rate": "1024"}
    wait_for(lambda: config("/config/users/acme.reader") == capped)
    wait_for(lambda: config("/config/users/acme.orders") == capped)
    wait_for(lambda: config("/config/users/acme.orders/clients/api") == {
        "producer_byte_rate": "500", "consumer_byte_rate": "1024"})

    # Raised above the spend: the overrides are published as they were, the cap's own go.
    assert api.put("/api/v1/tenants/acme/budget/", {"amount": "50.00", "cap_byte_rate": 1024},
                   format="json").json()["capped"] is False
    wait_for(lambda: config("/config/users/acme.orders/clients/api") == {
        "producer_byte_rate": "500", "consumer_byte_rate": "4096"})
    wait_for(lambda: not config("/config/users/acme.reader"))
    wait_for(lambda: not config("/config/users/acme.orders"))  # kept: it has a child entity
    check_all(timezone.now())
    assert not Alert.objects.filter(resolved_at__isnull=True).exists()
    assert Alert.objects.filter(key="budget:80").exclude(resolved_at=None).exists()

    # A deleted budget's open alerts are resolved at the next check.
    assert api.put("/api/v1/tenants/acme/budget/", {"amount": "5.00", "thresholds": [50]},
                   format="json").status_code == 200
    check_all(timezone.now())
    assert Alert.objects.filter(key="budget:50", resolved_at__isnull=True).exists()
    assert api.delete("/api/v1/tenants/acme/budget/").status_code == 204
    check_all(timezone.now())
    assert not Alert.objects.filter(resolved_at__isnull=True).exists()


@pytest.mark.django_db
def test_the_openapi_schema_describes_cost_and_budget(client) -> None:  # type: ignore[no-untyped-def]
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    cost = schema["paths"]["/api/v1/tenants/{tenant_slug}/cost/"]["get"]
    assert [p["name"] for p in cost["parameters"] if p["in"] == "query"] == ["month"]
    assert cost["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/CostEstimate"}
    budget = schema["paths"]["/api/v1/tenants/{tenant_slug}/budget/"]
    assert {"get", "put", "delete"} <= budget.keys()
    fields = schema["components"]["schemas"]["Budget"]["properties"]
    assert {"amount", "thresholds", "cap_byte_rate", "capped", "spend"} <= fields.keys()
    assert fields["capped"].get("readOnly") is True
