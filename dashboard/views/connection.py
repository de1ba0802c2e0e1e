"""How clients connect: the cluster CA certificate, offered when it is not a public one."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse

from ..clients import CA_FILE_NAME, ca_download_available


@login_required
def ca_certificate(request: HttpRequest) -> HttpResponse:
    """The PEM file clients name as ``ssl.ca.location`` (404 when the CA is a public one)."""
    if not ca_download_available():
        raise Http404("the brokers' certificates chain to a public CA")
    try:
        pem = Path(settings.SSL_CA_LOCATION).read_bytes()
    except OSError as exc:
        raise Http404(f"CA certificate unreadable: {exc.strerror}") from exc
    response = HttpResponse(pem, content_type="application/x-pem-file")
    response["Content-Disposition"] = f'attachment; filename="{CA_FILE_NAME}"'
    return response
