"""``{% connection_info %}``: the bootstrap servers, protocol and CA download, on any page."""

from __future__ import annotations

from typing import Any

from django import template
from django.conf import settings

from ..clients import CA_FILE_NAME, ca_download_available

register = template.Library()


@register.inclusion_tag("dashboard/includes/connection_info.html")
def connection_info() -> dict[str, Any]:
    return {"bootstrap": settings.BOOTSTRAP_SERVERS, "protocol": settings.CLIENT_SECURITY_PROTOCOL,
            "ca_download": ca_download_available(), "ca_file": CA_FILE_NAME}
