"""A tenant's console users (its team): who may sign in, with which role, and invitations.

Operators invite a tenant's admins and a tenant's admins invite colleagues
(``tenants.invitations``); the invited person opens the one-time link, sets a password and is
signed in.  After an invitation the page redirects (post/redirect/get); where settings allow it
(development, ``SHOW_INVITATION_LINKS``) the link is shown once on the page the redirect leads to.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import PasswordResetConfirmView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy

from tenants import invitations
from tenants.models import Principal, Tenant

from ..forms import InvitationForm
from ..listing import listing
from .common import run_service, tenant_view

INVITE_LINK_SESSION = "dashboard.invitation_link"


@tenant_view
def team(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    form = InvitationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        invitation = run_service(form, invitations.invite, request.user, tenant,
                                 email=form.cleaned_data["email"], role=form.cleaned_data["role"],
                                 site_url=request.build_absolute_uri("/"))
        if invitation is not None:
            email = form.cleaned_data["email"].strip().lower()
            messages.success(request, f"Invitation sent to {email} "
                                      f"({invitation.principal.get_role_display()}).")
            if getattr(settings, "SHOW_INVITATION_LINKS", False):
                request.session[INVITE_LINK_SESSION] = {
                    "tenant": tenant.slug, "email": email, "url": invitation.accept_url}
            return redirect("dashboard:team", slug=tenant.slug)
    shown = request.session.get(INVITE_LINK_SESSION)
    link = None
    if request.method == "GET" and shown and shown["tenant"] == tenant.slug:
        link = request.session.pop(INVITE_LINK_SESSION)
    members = listing(request, tenant.principals.filter(kind=Principal.USER).select_related("user")
                      .order_by("name"), ["name", "user__email", "role"])
    return render(request, "dashboard/team.html", {
        "tenant": tenant, "form": form, "members": members, "link": link,
        "pending": {p.pk for p in members.rows if p.user and invitations.is_pending(p.user)}})


class InvitationAcceptView(PasswordResetConfirmView):
    """The one-time link: set a password, be signed in, land on the console.  Django's view
    moves the token out of the address into the session before showing the form, and refuses
    a used or expired link."""

    template_name = "dashboard/invite_accept.html"
    post_reset_login = True
    success_url = reverse_lazy("dashboard:home")
    reset_url_token = "set-password"

    def form_valid(self, form):  # type: ignore[no-untyped-def]
        response = super().form_valid(form)
        messages.success(self.request, "Password set: welcome to the console.")
        return response
