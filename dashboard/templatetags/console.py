"""Template filters of the console: reading topic configs and formatting rates and durations."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()

UNITS = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


@register.filter
def get_item(mapping: dict[str, Any], key: str) -> Any:
    """``configs|get_item:"retention.ms"``: dict keys with dots are not reachable otherwise."""
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def retention(value: str | None) -> str:
    """A ``retention.ms`` config for people: "forever", "7 d", "36 h", or the cluster default."""
    if value in (None, ""):
        return "cluster default"
    ms = int(value)
    if ms < 0:
        return "forever"
    hours = ms / 3_600_000
    return f"{hours / 24:g} d" if hours >= 24 and hours % 24 == 0 else f"{hours:g} h"


@register.filter
def rate(bytes_per_second: int | None) -> str:
    """A byte rate with a binary unit (quotas are set in bytes/s); None is unlimited."""
    if bytes_per_second is None:
        return "unlimited"
    for size, unit in UNITS:
        if bytes_per_second >= size:
            return f"{bytes_per_second / size:g} {unit}/s"
    return f"{bytes_per_second} B/s"


@register.filter
def seconds(value: float | None) -> str:
    """A time lag: "0 s", "12.5 s", "3.2 min", "1.5 h"; None means not catching up."""
    if value is None:
        return "not catching up"
    if value < 60:
        return f"{value:.1f} s" if value % 1 else f"{value:.0f} s"
    if value < 3600:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"
