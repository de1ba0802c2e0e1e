"""Consumer groups: the live list, one group's live page, and the offset reset."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from tenants.models import Tenant

from .. import services
from ..forms import ResetOffsetsForm
from ..kafka import KafkaRequestFailed
from ..listing import listing
from ..live import group_detail as detail_payload
from ..live import group_summary
from ..models import ConsumerGroupLag, LagSample
from .common import posts_only_read, require_write, tenant_view


def lag_history(tenant: Tenant, group: str) -> list[list[float]]:
    """[[epoch seconds, total lag], …] over the kept history, oldest first (the chart's data)."""
    rows = (LagSample.objects.filter(tenant=tenant, group=group).values("taken_at")
            .annotate(total=Sum("lag")).order_by("taken_at"))
    return [[row["taken_at"].timestamp(), row["total"]] for row in rows]


@tenant_view
def group_list(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """One page of the groups (``q`` searches their names); ``lag.js`` keeps the same page of
    each pushed snapshot, so live updates never change which groups are shown."""
    page = listing(request, ConsumerGroupLag.objects.filter(tenant=tenant).defer("lag")
                   .order_by("group"), ["group"])
    return render(request, "dashboard/groups.html", {
        "tenant": tenant, "groups": [group_summary(row) for row in page.rows], "listing": page})


@tenant_view
def group_page(request: HttpRequest, tenant: Tenant, group: str) -> HttpResponse:
    row = get_object_or_404(ConsumerGroupLag, tenant=tenant, group=group)
    return render(request, "dashboard/group.html", {
        "tenant": tenant, "group": detail_payload(row), "history": lag_history(tenant, group)})


@tenant_view
@posts_only_read
def group_reset(request: HttpRequest, tenant: Tenant, group: str) -> HttpResponse:
    """Preview (button ``preview``, swapped in by htmx) or apply (button ``apply``) a reset;
    read-only users may preview."""
    row = get_object_or_404(ConsumerGroupLag, tenant=tenant, group=group)
    topics = sorted({p["topic"] for p in row.lag.get("partitions", [])}
                    | set(tenant.topics.values_list("name", flat=True)))
    form = ResetOffsetsForm(request.POST or None, topics=topics)
    preview = None
    if request.method == "POST" and form.is_valid():
        try:
            if "apply" in request.POST:
                require_write(request)
                planned = services.reset_offsets(request.user, tenant, group, form.to_request())
                messages.success(request, f"Offsets of {len(planned)} partition(s) reset.")
                return redirect("dashboard:group", slug=tenant.slug, group=group)
            preview = services.preview_reset(tenant, group, form.to_request())
        except ValidationError as exc:
            form.add_error(None, exc.messages)
        except KafkaRequestFailed as exc:
            form.add_error(None, f"The brokers did not answer in time (a broker may be down or "
                                 f"slow), so nothing was changed; try again shortly. ({exc})")
    return render(request, "dashboard/group_reset.html",
                  {"tenant": tenant, "group": detail_payload(row), "form": form, "preview": preview})
