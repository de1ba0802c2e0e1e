"""REST: a topic's live state, traffic and messages, beside ``/api/v1/tenants/<slug>/topics/``.

- ``GET  …/topics/<name>/state/``: partitions (leader, replicas, ISR, log start, end offset,
  size) and every config with its source, as the brokers answer now.
- ``GET  …/topics/<name>/traffic/``: bytes in/out per minute over the last hour (``__usage``).
- ``POST …/topics/<name>/messages/``: read records as one of the tenant's API keys (its secret
  in the body, never stored), bounded like the console's browser (``dashboard.message_browser``).

Config changes go through ``PATCH …/topics/<name>/`` (the topic's desired ``configs``).
"""

from __future__ import annotations

from dataclasses import asdict

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from tenants.api.access import tenant_for
from tenants.models import ApiKey, Topic

from .message_browser import (
    DEFAULT_BYTES,
    DEFAULT_RECORDS,
    FORMATS,
    MAX_BYTES,
    MAX_RECORDS,
    BrowseRequest,
    read_as,
)
from .topic_state import read_topic_state
from .topic_traffic import read_traffic


class TopicPartitionStateSerializer(serializers.Serializer):
    partition = serializers.IntegerField()
    leader = serializers.IntegerField(allow_null=True)
    replicas = serializers.ListField(child=serializers.IntegerField())
    isr = serializers.ListField(child=serializers.IntegerField())
    log_start = serializers.IntegerField(allow_null=True)
    high_watermark = serializers.IntegerField(allow_null=True)
    size_bytes = serializers.IntegerField(allow_null=True)


class TopicConfigStateSerializer(serializers.Serializer):
    name = serializers.CharField()
    value = serializers.CharField(allow_null=True)
    source = serializers.ChoiceField(choices=["topic", "broker", "default"])  # type: ignore[assignment]
    editable = serializers.BooleanField()


class TopicStateSerializer(serializers.Serializer):
    partitions = TopicPartitionStateSerializer(many=True)
    configs = TopicConfigStateSerializer(many=True)
    # output only: shadowing Serializer.errors is harmless for a serializer never validated
    errors = serializers.ListField(child=serializers.CharField(),  # type: ignore[assignment]
                                   help_text="parts the brokers did not answer")


class TopicTrafficSerializer(serializers.Serializer):
    minutes = serializers.ListField(child=serializers.IntegerField(), help_text="epoch ms, UTC")
    bytes_in = serializers.ListField(child=serializers.IntegerField())
    bytes_out = serializers.ListField(child=serializers.IntegerField())
    truncated = serializers.BooleanField(help_text="older minutes left out (read bound)")
    error = serializers.CharField(allow_blank=True)


class BrowseRequestSerializer(serializers.Serializer):
    api_key = serializers.CharField(help_text="one of the tenant's API keys: its ACLs apply")
    secret = serializers.CharField(write_only=True, help_text="the key's secret (not stored)")
    partition = serializers.IntegerField(min_value=0, default=0)
    offset = serializers.IntegerField(min_value=0, required=False, allow_null=True)
    timestamp_ms = serializers.IntegerField(required=False, allow_null=True,
                                            help_text="first record at or after this time")
    max_records = serializers.IntegerField(min_value=1, max_value=MAX_RECORDS,
                                           default=DEFAULT_RECORDS)
    max_bytes = serializers.IntegerField(min_value=1, max_value=MAX_BYTES, default=DEFAULT_BYTES)
    format = serializers.ChoiceField(choices=FORMATS, default="auto")

    def validate(self, attrs: dict) -> dict:
        if attrs.get("offset") is not None and attrs.get("timestamp_ms") is not None:
            raise serializers.ValidationError("give offset or timestamp_ms, not both "
                                              "(neither: the newest records)")
        return attrs


class ShownSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=["json", "text", "hex"])
    text = serializers.CharField()


class BrowsedRecordSerializer(serializers.Serializer):
    partition = serializers.IntegerField()
    offset = serializers.IntegerField()
    timestamp_ms = serializers.IntegerField(allow_null=True)
    key = ShownSerializer(allow_null=True)
    value = ShownSerializer(allow_null=True)
    headers = serializers.ListField(child=serializers.ListField(), help_text="[name, shown]")
    size = serializers.IntegerField(help_text="bytes of key, value and headers")


class BrowseResultSerializer(serializers.Serializer):
    records = BrowsedRecordSerializer(many=True)
    log_start = serializers.IntegerField(allow_null=True)
    high_watermark = serializers.IntegerField(allow_null=True)
    partitions = serializers.IntegerField(allow_null=True)
    stopped = serializers.CharField(allow_blank=True, help_text="why reading stopped early")
    error = serializers.CharField(allow_blank=True)


def _topic(request: Request, tenant_slug: str, name: str) -> Topic:
    tenant = tenant_for(request, tenant_slug)
    return get_object_or_404(Topic.objects.select_related("tenant"), tenant=tenant, name=name)


class TopicStateView(APIView):
    """A topic's partitions and configs as the brokers answer now."""

    @extend_schema(responses=TopicStateSerializer)
    def get(self, request: Request, tenant_slug: str, name: str) -> Response:
        topic = _topic(request, tenant_slug, name)
        state = read_topic_state(topic.physical_name)
        return Response(TopicStateSerializer(asdict(state)).data)


class TopicTrafficView(APIView):
    """Bytes produced to and fetched from the topic per minute, last hour (metered usage)."""

    @extend_schema(responses=TopicTrafficSerializer)
    def get(self, request: Request, tenant_slug: str, name: str) -> Response:
        topic = _topic(request, tenant_slug, name)
        return Response(read_traffic(topic.tenant.slug, topic.name).as_json())


class TopicMessagesView(APIView):
    """Read a bounded run of records of one partition, as one of the tenant's API keys."""

    @extend_schema(request=BrowseRequestSerializer, responses=BrowseResultSerializer)
    def post(self, request: Request, tenant_slug: str, name: str) -> Response:
        topic = _topic(request, tenant_slug, name)
        body = BrowseRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        api_key = ApiKey.objects.filter(principal__tenant=topic.tenant, key=data["api_key"]).first()
        if api_key is None:
            return Response({"api_key": ["no such API key in this tenant"]},
                            status=status.HTTP_400_BAD_REQUEST)
        browse = BrowseRequest(partition=data["partition"], offset=data.get("offset"),
                               timestamp_ms=data.get("timestamp_ms"),
                               max_records=data["max_records"], max_bytes=data["max_bytes"],
                               format=data["format"])
        result = read_as(api_key, data["secret"], topic.name, browse)
        if not result.authenticated:
            return Response({"detail": result.error}, status=status.HTTP_403_FORBIDDEN)
        return Response(BrowseResultSerializer({
            **asdict(result), "records": [r.as_json() for r in result.records]}).data)
