"""The control plane's billing side: the plans file it exports, loading the job's output, the API."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.core.management import call_command

from quotas.billing import export_plans, load_month, previous_month
from quotas.models import Invoice, UsageDay
from tenants.models import Tenant
from tests.support.billing_files import job_output

pytestmark = pytest.mark.django_db

PRICES = {"currency": "EUR",
          "data_in_gb": {"free": "10", "tiers": [{"up_to": None, "unit_price": "0.08"}]}}


def test_previous_month_wraps_the_year() -> None:
    assert previous_month(datetime(2026, 11, 1).date()) == "2026-10"
    assert previous_month(datetime(2027, 1, 15).date()) == "2026-12"


def test_export_plans_prorates_new_tenants_and_defaults_missing_prices(make_tenant, plan) -> None:  # type: ignore[no-untyped-def]
    plan.prices = PRICES
    plan.save()
    old, new = make_tenant("old"), make_tenant("new")
    Tenant.objects.filter(pk=old.pk).update(created_at=datetime(2026, 1, 1, tzinfo=UTC))
    Tenant.objects.filter(pk=new.pk).update(created_at=datetime(2026, 10, 16, 12, 30, tzinfo=UTC))
    Tenant.objects.filter(pk=make_tenant("later").pk).update(
        created_at=datetime(2026, 11, 2, tzinfo=UTC))
    plans = export_plans("2026-10")
    assert sorted(plans) == ["new", "old"]
    assert plans["old"]["active_from"] is None
    assert plans["new"]["active_from"] == "2026-10-16T12:30:00+00:00"
    assert plans["old"]["currency"] == "EUR"
    prices = plans["old"]["prices"]
    assert prices["data_in_gb"] == PRICES["data_in_gb"]  # type: ignore[index]
    assert prices["storage_gb_hours"]["tiers"][0]["unit_price"] == "0"  # type: ignore[index]


def test_load_month_replaces_the_previous_load(make_tenant, tmp_path) -> None:  # type: ignore[no-untyped-def]
    tenant = make_tenant("acme")
    assert load_month("2026-10", job_output(tmp_path / "first", "acme", "1.76")) == 1
    assert load_month("2026-10", job_output(tmp_path / "second", "acme", "1.77")) == 1
    invoice = Invoice.objects.get(tenant=tenant, month="2026-10")
    assert invoice.total == Decimal("1.77")
    assert [(line.dimension, line.amount) for line in invoice.lines.all()] == [
        ("data_in", Decimal("1.77")), ("data_out", Decimal("0.00"))]
    assert UsageDay.objects.get(tenant=tenant).bytes_in == 32 * 2**30


def test_run_billing_load_only_and_invoice_api(make_tenant, admin_api, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    acme, _ = make_tenant("acme"), make_tenant("globex")
    job_output(tmp_path, "acme", "1.76")
    call_command("run_billing", month="2026-10", out=tmp_path, load_only=True)
    assert "loaded 1 invoice(s) for 2026-10" in capsys.readouterr().out
    api = admin_api(acme)
    listed = api.get("/api/v1/tenants/acme/invoices/").json()["results"]
    assert [(i["month"], i["total"]) for i in listed] == [("2026-10", "1.76")]
    detail = api.get("/api/v1/tenants/acme/invoices/2026-10/").json()
    assert [line["dimension"] for line in detail["lines"]] == ["data_in", "data_out"]
    assert api.get("/api/v1/tenants/globex/invoices/").status_code == 404
