"""Console pages. The home page lists the tenants the signed-in user may manage."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from tenants.api.access import is_operator, visible_tenants


@login_required
def home(request: HttpRequest) -> HttpResponse:
    tenants = visible_tenants(request.user).select_related("plan").prefetch_related("topics", "principals")
    return render(request, "dashboard/home.html",
                  {"tenants": tenants.order_by("slug"), "operator": is_operator(request.user)})
