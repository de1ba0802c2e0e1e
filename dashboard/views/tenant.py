"""A tenant's own pages: topics, service accounts and API keys, ACLs, client ids, quotas.

Every write is a POST that calls one service function and redirects (post/redirect/get), so a
reload never repeats it.  A new API key's secret rides in the session to the page the redirect
leads to, which takes it out as it shows it: shown once, never stored in the database.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from quotas import services as quota_services
from quotas.models import QuotaOverride
from tenants import services
from tenants.api.access import is_operator, visible_tenants
from tenants.models import Acl, ApiKey, ClientId, Principal, Tenant, Topic
from tenants.zookeeper import client

from ..clients import client_settings
from ..forms import (
    AclForm,
    ApiKeyForm,
    ClientIdForm,
    QuotaOverrideForm,
    ServiceAccountForm,
    TopicForm,
)
from ..listing import listing
from ..models import TopicThroughput
from ..quota_levels import KEYS, Effective, effective_quotas
from ..quota_usage import QUOTA_TYPES, ClusterUsage, scrape
from ..templatetags.console import rate
from ..topic_sizes import TopicSizes, scrape_topic_sizes
from .common import run_service, tenant_view


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The tenants this user may manage (a tenant admin: its own; an operator: all), with their
    sizes and the way into each tenant's pages."""
    tenants = visible_tenants(request.user).select_related("plan").annotate(
        topic_count=Count("topics", distinct=True),
        group_count=Count("group_lags", distinct=True)).order_by("slug")
    return render(request, "dashboard/home.html",
                  {"tenants": tenants, "operator": is_operator(request.user)})


@tenant_view
def overview(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    return redirect("dashboard:topics", slug=tenant.slug)


@tenant_view
def topics(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    form = TopicForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        topic = run_service(form, services.create_topic, request.user, tenant,
                            name=form.cleaned_data["name"],
                            partitions=form.cleaned_data["partitions"],
                            replication_factor=form.cleaned_data["replication_factor"],
                            configs=form.configs())
        if topic is not None:
            messages.success(request, f"Topic {topic.name} created.")
            return redirect("dashboard:topics", slug=tenant.slug)
    try:
        sizes, size_error = scrape_topic_sizes(client()), ""
    except Exception as exc:  # ZooKeeper unreachable: the topics are still worth listing
        sizes, size_error = TopicSizes(), f"Sizes unavailable: {exc}"
    page = listing(request, tenant.topics.order_by("name"), ["name"])
    throughput = {row.topic: row for row in TopicThroughput.objects.filter(
        tenant=tenant, topic__in=[topic.name for topic in page.rows])}
    rows = [(topic, throughput.get(topic.name), sizes.size(topic.physical_name, topic.partitions))
            for topic in page.rows]
    return render(request, "dashboard/topics.html", {
        "tenant": tenant, "form": form, "rows": rows, "unreachable": sizes.unreachable,
        "size_error": size_error, "listing": page})


@tenant_view
def topic_delete(request: HttpRequest, tenant: Tenant, name: str) -> HttpResponse:
    """GET asks for confirmation (type the name); POST with the matching name deletes."""
    topic = get_object_or_404(Topic, tenant=tenant, name=name)
    error = ""
    if request.method == "POST":
        if request.POST.get("confirm") == topic.name:
            services.delete_topic(request.user, topic)
            messages.success(request, f"Topic {name} deleted.")
            return redirect("dashboard:topics", slug=tenant.slug)
        error = "Type the topic's name exactly to confirm."
    return render(request, "dashboard/topic_delete.html",
                  {"tenant": tenant, "topic": topic, "error": error})


NEW_KEY_SESSION = "dashboard.new_api_key"


@tenant_view
def api_keys(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """Service accounts and their keys; a key just created shows its secret on the page the
    creation redirects to, once."""
    account_form = ServiceAccountForm(request.POST if "create_account" in request.POST else None)
    key_form = ApiKeyForm(request.POST if "create_key" in request.POST else None, tenant=tenant)
    if account_form.is_bound and account_form.is_valid():
        account = run_service(account_form, services.create_principal, request.user, tenant,
                              **account_form.cleaned_data)
        if account is not None:
            messages.success(request, f"Service account {account.name} created.")
            return redirect("dashboard:api-keys", slug=tenant.slug)
    if key_form.is_bound and key_form.is_valid():
        result = run_service(key_form, services.create_api_key, request.user,
                             key_form.cleaned_data["principal"],
                             description=key_form.cleaned_data["description"])
        if result is not None:
            api_key, secret = result
            request.session[NEW_KEY_SESSION] = {"tenant": tenant.slug, "key": api_key.key,
                                                "secret": secret}
            messages.success(request, f"API key {api_key.key} created.")
            return redirect("dashboard:api-keys", slug=tenant.slug)
    created = None
    new_key = request.session.get(NEW_KEY_SESSION)
    if request.method == "GET" and new_key and new_key["tenant"] == tenant.slug:
        del request.session[NEW_KEY_SESSION]  # shown on this response only
        created = {"key": new_key["key"], "secret": new_key["secret"],
                   "snippets": client_settings(settings.BOOTSTRAP_SERVERS, new_key["key"],
                                               new_key["secret"])}
    keys = listing(request, ApiKey.objects.filter(principal__tenant=tenant).select_related(
        "principal").order_by("created_at", "id"), ["key", "principal__name", "description"])
    accounts = tenant.principals.filter(kind=Principal.SERVICE_ACCOUNT).order_by("name")
    return render(request, "dashboard/api_keys.html", {
        "tenant": tenant, "keys": keys, "accounts": accounts, "account_form": account_form,
        "key_form": key_form, "created": created})


@require_POST
@tenant_view
def api_key_revoke(request: HttpRequest, tenant: Tenant, key: str) -> HttpResponse:
    api_key = get_object_or_404(ApiKey, principal__tenant=tenant, key=key)
    services.revoke_api_key(request.user, api_key)
    messages.success(request, f"API key {key} revoked.")
    return redirect("dashboard:api-keys", slug=tenant.slug)


@tenant_view
def acls(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    form = AclForm(request.POST or None, tenant=tenant)
    if request.method == "POST" and form.is_valid():
        acl = run_service(form, services.grant_acl, request.user, tenant, **form.cleaned_data)
        if acl is not None:
            messages.success(request, f"Granted {acl}.")
            return redirect("dashboard:acls", slug=tenant.slug)
    rules = listing(request, Acl.objects.filter(tenant=tenant).select_related("principal__tenant")
                    .order_by("id"), ["principal__name", "operation", "resource_type",
                                      "resource_name"])
    return render(request, "dashboard/acls.html", {"tenant": tenant, "form": form, "acls": rules})


@require_POST
@tenant_view
def acl_revoke(request: HttpRequest, tenant: Tenant, pk: int) -> HttpResponse:
    acl = get_object_or_404(Acl.objects.select_related("tenant", "principal__tenant"),
                            tenant=tenant, pk=pk)
    services.revoke_acl(request.user, acl)
    messages.success(request, f"Revoked {acl}.")
    return redirect("dashboard:acls", slug=tenant.slug)


@tenant_view
def client_ids(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    form = ClientIdForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        entry = run_service(form, services.register_client_id, request.user, tenant,
                            **form.cleaned_data)
        if entry is not None:
            messages.success(request, f"Client id {entry.client_id} registered.")
            return redirect("dashboard:client-ids", slug=tenant.slug)
    entries = listing(request, ClientId.objects.filter(tenant=tenant).order_by("client_id"),
                      ["client_id", "description"])
    return render(request, "dashboard/client_ids.html",
                  {"tenant": tenant, "form": form, "entries": entries})


@require_POST
@tenant_view
def client_id_delete(request: HttpRequest, tenant: Tenant, pk: int) -> HttpResponse:
    entry = get_object_or_404(ClientId, tenant=tenant, pk=pk)
    services.delete_client_id(request.user, entry)
    messages.success(request, f"Client id {entry.client_id} removed.")
    return redirect("dashboard:client-ids", slug=tenant.slug)


def _limit(key: str, value: str | int | float | None) -> str:
    if value is None:
        return "unlimited"
    if key == "request_percentage":
        return f"{float(value):g} %"
    return rate(int(value))


def _display(key: str, effective: Effective) -> str:
    return _limit(key, effective.value)


def _override_cells(override: QuotaOverride, plan_config: dict[str, str]) -> list[str]:
    """Per quota key: the override's own limit, or, where it leaves the key unset, what the
    principal falls back to without a more specific level: the plan's value."""
    configured = override.config()
    return [_limit(key, configured[key]) if key in configured
            else f"plan default: {_limit(key, plan_config.get(key))}" for key in KEYS]


def _usage(usage: ClusterUsage, user: str, client_id: str | None) -> list[str]:
    """Per quota type: "<rate> of <limit> on broker N" where the broker measures the most."""
    def shown(key: str, value: float | None) -> str:
        if value is None:
            return "unlimited"
        return f"{value:.3g} %" if key == "request_percentage" else rate(int(value))

    cells = []
    for quota_type, key in QUOTA_TYPES.items():
        peak = usage.peak(quota_type, user, client_id)
        cells.append("idle" if peak is None else
                     f"{shown(key, peak.rate)} of {shown(key, peak.limit)} on broker {peak.broker_id}")
    return cells


def _quota_form(request: HttpRequest, tenant: Tenant) -> QuotaOverrideForm:
    """The override form: bound to a POST, prefilled from ``?edit=<override id>``, or empty."""
    if request.method == "POST":
        return QuotaOverrideForm(request.POST, tenant=tenant)
    editing = QuotaOverride.objects.filter(tenant=tenant, pk=request.GET.get("edit") or 0,
                                           principal__isnull=False).first()
    if editing is None:
        return QuotaOverrideForm(tenant=tenant)
    assert editing.principal is not None
    return QuotaOverrideForm(tenant=tenant, initial={
        "principal": editing.principal.name, "client_id": editing.client_id,
        "producer_byte_rate": editing.producer_byte_rate,
        "consumer_byte_rate": editing.consumer_byte_rate,
        "request_percentage": editing.request_percentage})


@tenant_view
def quotas(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """What the control plane knows: the plan's defaults, the overrides, and per principal and
    client id the quota each key resolves to and the level it comes from (Kafka's precedence).
    A POST sets an override of one service account (and client id): created, or replaced with
    the rates given (``quotas.services.set_quota``, published to the brokers).

    Current usage comes from the brokers' metrics: quotas are per broker, so each row shows the
    broker where the principal uses the most of each quota, against the limit that broker applies.
    """
    form = _quota_form(request, tenant)
    if request.method == "POST" and form.is_valid():
        override = run_service(form, quota_services.set_quota, request.user, tenant=tenant,
                               principal=form.cleaned_data["principal"],
                               client_id=form.cleaned_data["client_id"] or "", **form.limits())
        if override is not None:
            messages.success(request, f"Quota {override.entity_path} set.")
            return redirect("dashboard:quotas", slug=tenant.slug)
    try:
        usage, usage_error = scrape(client(), tenants=[tenant.slug]), ""
    except Exception as exc:  # ZooKeeper unreachable: the configuration is still worth showing
        usage, usage_error = ClusterUsage(), f"current usage unavailable: {exc}"
    overrides = QuotaOverride.objects.filter(tenant=tenant).select_related(
        "principal__tenant").order_by("entity_path")
    applicable = QuotaOverride.objects.filter(Q(tenant=tenant) | Q(tenant__isnull=True)
                                              ).select_related("principal__tenant")
    configured = {(o.user, o.client_id or None): o.config() for o in applicable}
    client_ids = [None, *ClientId.objects.filter(tenant=tenant).order_by("client_id")
                  .values_list("client_id", flat=True)]
    effective = []
    for principal in tenant.principals.filter(kind=Principal.SERVICE_ACCOUNT).order_by("name"):
        for client_id in client_ids:
            resolved = effective_quotas(configured, principal.kafka_user, client_id,
                                        tenant.plan.quota_config())
            effective.append({"principal": principal.name, "client_id": client_id,
                              "quotas": [(_display(key, resolved[key]), resolved[key].level)
                                         for key in KEYS],
                              "usage": _usage(usage, principal.kafka_user, client_id)})
    plan_config = tenant.plan.quota_config()
    return render(request, "dashboard/quotas.html", {
        "tenant": tenant, "plan": tenant.plan, "effective": effective, "form": form,
        "overrides": [(o, _override_cells(o, plan_config)) for o in overrides],
        "unreachable": usage.unreachable, "usage_error": usage_error})


@require_POST
@tenant_view
def quota_delete(request: HttpRequest, tenant: Tenant, pk: int) -> HttpResponse:
    """Remove an override: its entity falls back to the next level (the plan's defaults)."""
    override = get_object_or_404(QuotaOverride, tenant=tenant, pk=pk)
    quota_services.delete_quota(request.user, override)
    messages.success(request, f"Quota {override.entity_path} removed.")
    return redirect("dashboard:quotas", slug=tenant.slug)
