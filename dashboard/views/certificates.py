"""A tenant's client certificates (mTLS): issue one for a service account, list, revoke.

Like API keys: the POST calls one service function and redirects; the new certificate and
its private key ride in the session to the page the redirect leads to, which takes them out
as it shows them (shown once, never stored in the database).
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from tenants import services
from tenants.models import ClientCertificate, Principal, Tenant

from .common import run_service, tenant_view

NEW_CERTIFICATE_SESSION = "dashboard.new_client_certificate"


class CertificateForm(forms.Form):
    principal = forms.ModelChoiceField(queryset=Principal.objects.none(), to_field_name="name",
                                       label="Service account")

    def __init__(self, *args: object, tenant: Tenant, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        field = self.fields["principal"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = Principal.objects.filter(
            tenant=tenant, kind=Principal.SERVICE_ACCOUNT).order_by("name")


def snippets(bootstrap: str, serial: str) -> dict[str, str]:
    """How clients use the certificate (files saved as <serial>.crt / <serial>.key)."""
    files = (f"ssl.ca.location=ca.pem ssl.certificate.location={serial}.crt "
             f"ssl.key.location={serial}.key").split()
    return {
        "kcat": f"kcat -b {bootstrap} -X security.protocol=SSL "
                + " ".join(f"-X {setting}" for setting in files) + " -L",
        "confluent-kafka": "{" + ", ".join(
            [f'"bootstrap.servers": "{bootstrap}"', '"security.protocol": "SSL"']
            + ['"{}": "{}"'.format(*setting.split("=")) for setting in files]) + "}",
    }


@tenant_view
def client_certificates(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    form = CertificateForm(request.POST if request.method == "POST" else None, tenant=tenant)
    if form.is_bound and form.is_valid():
        try:
            issued = run_service(form, services.issue_client_certificate, request.user,
                                 form.cleaned_data["principal"])
        except services.CertificateAuthorityMissing:
            issued = None
            form.add_error(None, "This deployment has no CA to sign client certificates.")
        if issued is not None:
            request.session[NEW_CERTIFICATE_SESSION] = {
                "tenant": tenant.slug, "serial": issued.serial, "subject": issued.subject,
                "certificate": issued.certificate_pem, "key": issued.private_key_pem}
            messages.success(request, f"Certificate {issued.serial} issued.")
            return redirect("dashboard:client-certificates", slug=tenant.slug)
    created = None
    new = request.session.get(NEW_CERTIFICATE_SESSION)
    if request.method == "GET" and new and new["tenant"] == tenant.slug:
        del request.session[NEW_CERTIFICATE_SESSION]  # shown on this response only
        bootstrap = settings.MTLS_BOOTSTRAP_SERVERS or "<the brokers' SSL listeners>"
        created = {**new, "snippets": snippets(bootstrap, new["serial"])}
    certificates = ClientCertificate.objects.filter(principal__tenant=tenant).select_related(
        "principal").order_by("-created_at", "-id")
    return render(request, "dashboard/client_certificates.html", {
        "tenant": tenant, "certificates": certificates, "form": form, "created": created,
        "can_issue": bool(settings.SSL_CA_LOCATION and settings.SSL_CA_KEY_LOCATION)})


@require_POST
@tenant_view
def client_certificate_revoke(request: HttpRequest, tenant: Tenant, serial: str) -> HttpResponse:
    certificate = get_object_or_404(ClientCertificate, principal__tenant=tenant, serial=serial)
    services.revoke_client_certificate(request.user, certificate)
    messages.success(request, f"Certificate {serial} revoked.")
    return redirect("dashboard:client-certificates", slug=tenant.slug)
