"""A tenant's invoices, their line items, and daily usage charts (the monthly billing job's
output, loaded by ``manage.py run_billing``)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from tenants.models import Tenant

from ..listing import listing
from .common import tenant_view


@tenant_view
def invoices(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    page = listing(request, tenant.invoices.prefetch_related("lines").order_by("-month"),
                   ["month", "plan"], page_size=12)
    invoices = page.rows
    selected = request.GET.get("month") or (invoices[0].month if invoices else None)
    days = tenant.usage_days.filter(month=selected).order_by("day") if selected else []
    chart = {
        "days": [day.day.isoformat() for day in days],
        "gib_in": [round(day.bytes_in / 2**30, 6) for day in days],
        "gib_out": [round(day.bytes_out / 2**30, 6) for day in days],
        "partition_hours": [day.partition_hours for day in days],
    }
    return render(request, "dashboard/invoices.html", {
        "tenant": tenant, "invoices": invoices, "selected": selected, "chart": chart,
        "listing": page})
