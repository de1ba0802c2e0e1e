"""The invoices page: a tenant's invoices with their lines and the daily usage chart data."""

import json
import re

import pytest

from quotas.billing import load_month
from tests.support.billing_files import job_output

pytestmark = pytest.mark.django_db


def test_invoice_lines_and_daily_usage(acme, globex, admin_client_for, tmp_path) -> None:  # type: ignore[no-untyped-def]
    load_month("2026-10", job_output(tmp_path, "acme", "1.76"))
    page = admin_client_for(acme).get("/t/acme/invoices/").content.decode()
    assert 'id="invoice-2026-10"' in page and "1.76 EUR" in page and "data_in" in page
    found = re.search(r'<script id="usage-data" type="application/json">(.*?)</script>',
                      page, re.S)
    assert found is not None, "the page has no usage-data script"
    chart = json.loads(found.group(1))
    assert chart["days"] == ["2026-10-05"] and chart["gib_in"] == [32.0]
    assert admin_client_for(globex).get("/t/acme/invoices/").status_code == 404


def test_no_invoice_yet(acme, admin_client_for) -> None:  # type: ignore[no-untyped-def]
    assert "No invoice yet" in admin_client_for(acme).get("/t/acme/invoices/").content.decode()
