"""Operators' pages: all tenants (create, suspend, resume) and the brokers' health."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from tenants import services
from tenants.models import Tenant
from tenants.zookeeper import client

from ..cluster import read_cluster
from ..forms import TenantForm
from ..quota_usage import ClusterUsage, scrape
from .common import operator_view, run_service


@operator_view
def tenants(request: HttpRequest) -> HttpResponse:
    form = TenantForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        tenant = run_service(form, services.create_tenant, request.user, **form.cleaned_data)
        if tenant is not None:
            messages.success(request, f"Tenant {tenant.slug} created.")
            return redirect("dashboard:ops-tenants")
    rows = Tenant.objects.select_related("plan").annotate(
        topic_count=Count("topics", distinct=True),
        principal_count=Count("principals", distinct=True)).order_by("slug")
    return render(request, "dashboard/ops_tenants.html", {"tenants": rows, "form": form})


@require_POST
@operator_view
def tenant_status(request: HttpRequest, slug: str) -> HttpResponse:
    """Suspend or resume a tenant (``status`` in the POST body)."""
    tenant = get_object_or_404(Tenant, slug=slug)
    status = request.POST.get("status")
    if status in (Tenant.ACTIVE, Tenant.SUSPENDED):
        services.update_tenant(request.user, tenant, status=status)
        messages.success(request, f"Tenant {slug} is now {status}.")
    return redirect("dashboard:ops-tenants")


@operator_view
def brokers(request: HttpRequest) -> HttpResponse:
    try:
        zk = client()
        view, usage, error = read_cluster(zk), scrape(zk), ""
    except (KazooException, KazooTimeoutError) as exc:  # the latter: could not connect at all
        view, usage, error = None, ClusterUsage(), f"ZooKeeper is unreachable: {exc}"
    return render(request, "dashboard/ops_brokers.html", {
        "cluster": view, "error": error, "throttled": usage.throttled(),
        "unreachable": usage.unreachable})
