"""Forms of the topic page: one config change, and where the message browser starts reading."""

from __future__ import annotations

from datetime import UTC, datetime

from django import forms

from tenants.models import ApiKey, Tenant

from .message_browser import (
    DEFAULT_BYTES,
    DEFAULT_RECORDS,
    FORMATS,
    MAX_BYTES,
    MAX_RECORDS,
    BrowseRequest,
)


class ConfigChangeForm(forms.Form):
    """Set one config to a value, or (``reset``) remove the topic's override of it."""

    name = forms.CharField(max_length=255)
    value = forms.CharField(max_length=1000, required=False)
    reset = forms.BooleanField(required=False)

    def clean(self) -> dict:
        data = super().clean() or {}
        if not data.get("reset") and data.get("value", "") == "":
            raise forms.ValidationError("Give a value, or reset the config to its default.")
        return data


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds, or an ISO 8601 date-time (UTC unless it names an offset)."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise forms.ValidationError(
            "a date-time like 2026-11-24T16:00:00 (UTC) or epoch milliseconds") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


class ApiKeyChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: ApiKey) -> str:  # type: ignore[override]
        return f"{obj.key} ({obj.principal.name})"


class BrowseForm(forms.Form):
    """The key to read as (with its secret: never stored) and where to start."""

    START_CHOICES = [("newest", "the newest records"), ("offset", "an offset"),
                     ("timestamp", "a time")]

    api_key = ApiKeyChoiceField(queryset=ApiKey.objects.none(), to_field_name="key",
                                label="Read as API key")
    secret = forms.CharField(widget=forms.PasswordInput, help_text="not stored")
    partition = forms.IntegerField(min_value=0, initial=0)
    start = forms.ChoiceField(choices=START_CHOICES, initial="newest")
    offset = forms.IntegerField(min_value=0, required=False)
    timestamp = forms.CharField(required=False, help_text="UTC, e.g. 2026-11-24T16:00:00")
    max_records = forms.IntegerField(min_value=1, max_value=MAX_RECORDS, initial=DEFAULT_RECORDS)
    max_bytes = forms.IntegerField(min_value=1, max_value=MAX_BYTES, initial=DEFAULT_BYTES)
    format = forms.ChoiceField(choices=[(f, f) for f in FORMATS], initial="auto")

    def __init__(self, *args: object, tenant: Tenant, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        field = self.fields["api_key"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = ApiKey.objects.filter(principal__tenant=tenant).select_related(
            "principal").order_by("principal__name", "key")

    def clean(self) -> dict:
        data = super().clean() or {}
        start = data.get("start")
        if start == "offset" and data.get("offset") is None:
            self.add_error("offset", "Give the offset to start from.")
        if start == "timestamp":
            try:
                data["timestamp_ms"] = parse_timestamp(data.get("timestamp") or "")
            except forms.ValidationError as exc:
                self.add_error("timestamp", exc)
        return data

    def browse_request(self) -> BrowseRequest:
        data = self.cleaned_data
        return BrowseRequest(
            partition=data["partition"],
            offset=data["offset"] if data["start"] == "offset" else None,
            timestamp_ms=data.get("timestamp_ms") if data["start"] == "timestamp" else None,
            max_records=data["max_records"], max_bytes=data["max_bytes"], format=data["format"])
