"""Open transactions of a tenant (read from the brokers now) and the abort of a hanging one."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from tenants.models import Tenant

from ..kafka import KafkaRequestFailed
from ..transactions import abort_transaction, tenant_transactions
from .common import tenant_view

BROKERS_DOWN = ("The brokers did not answer in time (a broker may be down or slow), so nothing "
                "is shown or changed; try again shortly.")


@tenant_view
def transaction_list(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    found, error = None, ""
    try:
        found = tenant_transactions(tenant)
    except KafkaRequestFailed as exc:
        error = f"{BROKERS_DOWN} ({exc})"
    return render(request, "dashboard/transactions.html",
                  {"tenant": tenant, "found": found, "error": error})


def _int(value: str | None) -> int | None:
    try:
        return int(value or "")
    except ValueError:
        return None


@tenant_view
def transaction_abort(request: HttpRequest, tenant: Tenant, transactional_id: str) -> HttpResponse:
    """GET asks for confirmation (type the transactional id); POST with the matching id asks the
    coordinator to abort the transaction of the producer id and epoch the list showed."""
    source = request.POST if request.method == "POST" else request.GET
    producer_id, producer_epoch = _int(source.get("producer_id")), _int(source.get("producer_epoch"))
    error = ""
    if producer_id is None or producer_epoch is None:
        error = "Open this page from the transactions list (it names the producer id and epoch)."
    elif request.method == "POST":
        if request.POST.get("confirm") != transactional_id:
            error = "Type the transactional id exactly to confirm."
        else:
            try:
                abort_transaction(request.user, tenant, transactional_id, producer_id,
                                  producer_epoch)
            except ValidationError as exc:
                error = " ".join(exc.messages)
            except KafkaRequestFailed as exc:
                error = f"{BROKERS_DOWN} ({exc})"
            else:
                messages.success(request, f"Transaction {transactional_id} is being aborted; "
                                          f"its producer is fenced.")
                return redirect("dashboard:transactions", slug=tenant.slug)
    return render(request, "dashboard/transaction_abort.html", {
        "tenant": tenant, "transactional_id": transactional_id, "producer_id": producer_id,
        "producer_epoch": producer_epoch, "error": error}, status=400 if error else 200)
