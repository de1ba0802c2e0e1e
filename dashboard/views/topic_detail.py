"""A topic's own pages: partitions and configs (editable), traffic chart, message browser.

The page renders what the brokers answer now; the traffic chart loads its series separately
(``traffic.json``, read from ``__usage``) so a slow read never delays the page.  Config changes
are validated by the brokers first, then saved as the topic's desired state (post/redirect/get).
Reading messages is a POST only because it carries an API key's secret; it writes nothing.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from tenants import services
from tenants.kafka_admin import KafkaRequestFailed
from tenants.models import Tenant, Topic

from ..message_browser import read_as
from ..topic_forms import BrowseForm, ConfigChangeForm
from ..topic_state import MANAGED_CONFIGS, check_config_change, read_topic_state
from ..topic_traffic import WINDOW_MINUTES, read_traffic
from .common import posts_only_read, run_service, tenant_view


def _topic(tenant: Tenant, name: str) -> Topic:
    return get_object_or_404(Topic.objects.select_related("tenant"), tenant=tenant, name=name)


@tenant_view
def topic_page(request: HttpRequest, tenant: Tenant, name: str) -> HttpResponse:
    topic = _topic(tenant, name)
    state = read_topic_state(topic.physical_name)
    return render(request, "dashboard/topic.html", {
        "tenant": tenant, "topic": topic, "state": state, "window_minutes": WINDOW_MINUTES,
        "overrides": topic.configs})


@tenant_view
def topic_traffic(request: HttpRequest, tenant: Tenant, name: str) -> JsonResponse:
    topic = _topic(tenant, name)
    return JsonResponse(read_traffic(tenant.slug, topic.name).as_json())


@require_POST
@tenant_view
def topic_config(request: HttpRequest, tenant: Tenant, name: str) -> HttpResponse:
    """Set or reset one config: the brokers validate it, then it becomes desired state."""
    topic = _topic(tenant, name)
    form = ConfigChangeForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(str(e) for errors in form.errors.values() for e in errors))
        return redirect("dashboard:topic", slug=tenant.slug, name=topic.name)
    key, reset = form.cleaned_data["name"], form.cleaned_data["reset"]
    if key in MANAGED_CONFIGS:
        messages.error(request, f"{key} is managed by the service.")
        return redirect("dashboard:topic", slug=tenant.slug, name=topic.name)
    configs = {k: str(v) for k, v in topic.configs.items()}
    if reset:
        configs.pop(key, None)
        to_set, to_delete = {}, [key]
    else:
        configs[key] = to_set_value = form.cleaned_data["value"]
        to_set, to_delete = {key: to_set_value}, []
    try:
        check_config_change(topic.physical_name, to_set, to_delete)
    except KafkaRequestFailed as exc:
        messages.error(request, f"The brokers refused {key}: {exc}")
        return redirect("dashboard:topic", slug=tenant.slug, name=topic.name)
    if run_service(form, services.update_topic, request.user, topic, configs=configs) is None:
        messages.error(request, " ".join(str(e) for e in form.non_field_errors()))
    else:
        messages.success(request, f"{key} {'reset to its default' if reset else 'set'}; "
                                  "the brokers apply it within seconds.")
    return redirect("dashboard:topic", slug=tenant.slug, name=topic.name)


@tenant_view
@posts_only_read  # a read: the form is posted because it carries an API key secret
def topic_messages(request: HttpRequest, tenant: Tenant, name: str) -> HttpResponse:
    topic = _topic(tenant, name)
    form = BrowseForm(request.POST or None, tenant=tenant)
    result = None
    if request.method == "POST" and form.is_valid():
        result = read_as(form.cleaned_data["api_key"], form.cleaned_data["secret"], topic.name,
                         form.browse_request())
    return render(request, "dashboard/topic_messages.html",
                  {"tenant": tenant, "topic": topic, "form": form, "result": result})
