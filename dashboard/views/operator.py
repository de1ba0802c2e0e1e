"""Operators' pages: all tenants (create, suspend, resume), the brokers' health and partition moves."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from tenants import services
from tenants.models import Reassignment, Tenant
from tenants.reassignment import MoveConflict
from tenants.reassignments import read_facts
from tenants.zookeeper import client

from ..cluster import read_cluster
from ..forms import ReassignmentForm, TenantForm
from ..listing import listing
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
    rows = listing(request, Tenant.objects.select_related("plan").annotate(
        topic_count=Count("topics", distinct=True),
        principal_count=Count("principals", distinct=True)).order_by("slug"),
        ["slug", "name", "plan__slug", "status"])
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


ZOOKEEPER_ERRORS = (KazooException, KazooTimeoutError)  # the latter: could not connect at all
RECENT_REASSIGNMENTS = 50


@operator_view
def brokers(request: HttpRequest) -> HttpResponse:
    """Brokers, partition health per broker, throttled clients, and partition moves (start one)."""
    form = ReassignmentForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        if _start_reassignment(request, form):
            return redirect("dashboard:ops-brokers")
    try:
        zk = client()
        view, usage, error = read_cluster(zk), scrape(zk), ""
    except ZOOKEEPER_ERRORS as exc:
        view, usage, error = None, ClusterUsage(), f"ZooKeeper is unreachable: {exc}"
    return render(request, "dashboard/ops_brokers.html", {
        "cluster": view, "error": error, "throttled": usage.throttled(),
        "unreachable": usage.unreachable, "form": form,
        "reassignments": Reassignment.objects.select_related("created_by")[:RECENT_REASSIGNMENTS]})


def _start_reassignment(request: HttpRequest, form: ReassignmentForm) -> bool:
    data = form.cleaned_data
    try:
        facts = read_facts(client(), [data["topic"]])
        move = run_service(form, services.create_reassignment, request.user, facts, **data)
    except ZOOKEEPER_ERRORS as exc:
        form.add_error(None, f"ZooKeeper is unreachable: {exc}")
        return False
    except MoveConflict as exc:
        form.add_error(None, str(exc))
        return False
    if move is not None:
        messages.success(request, f"Reassignment of {move.topic}-{move.partition} to {move.replicas} "
                                  "requested.")
    return move is not None


@require_POST
@operator_view
def preferred_election(request: HttpRequest) -> HttpResponse:
    """Move leadership back to the preferred replica of every partition led by another one."""
    try:
        zk = client()
        partitions = read_cluster(zk).not_preferred
        if partitions:
            services.request_preferred_election(
                request.user, read_facts(zk, [t for t, _ in partitions]), partitions)
        messages.success(request, f"Preferred-leader election requested for {len(partitions)} "
                                  "partition(s).")
    except ZOOKEEPER_ERRORS as exc:
        messages.error(request, f"ZooKeeper is unreachable: {exc}")
    return redirect("dashboard:ops-brokers")
