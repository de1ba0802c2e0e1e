"""Filters of the message browser."""

from __future__ import annotations

from datetime import UTC, datetime

from django import template

register = template.Library()


@register.filter
def utc_ms(epoch_ms: int | None) -> str:
    """A record timestamp (epoch ms) as ``2026-11-24 16:05:01.123``, UTC."""
    if epoch_ms is None or epoch_ms < 0:
        return "–"
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
