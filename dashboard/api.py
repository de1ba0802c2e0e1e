"""REST: ``/api/v1/tenants/<slug>/consumer-groups/[<group>/]`` — lag for automation.

The list answers one summary per group (state, member count, Burrow status, total and max lag,
time lag in seconds); a group adds its members and per-partition committed offset, log start,
high watermark, lag and status.  Data is the latest snapshot (``updated_at``, epoch seconds).
"""

from __future__ import annotations

from typing import Any

from rest_framework import mixins, serializers

from tenants.api.views import TenantOwnedViewSet

from .live import group_detail, group_summary
from .models import ConsumerGroupLag


class ConsumerGroupSummarySerializer(serializers.ModelSerializer):
    class Meta:
        model = ConsumerGroupLag
        fields = ["group", "state", "members", "status", "total_lag", "max_lag", "time_lag_s",
                  "updated_at"]

    def to_representation(self, instance: ConsumerGroupLag) -> dict[str, Any]:
        return group_summary(instance)


class ConsumerGroupDetailSerializer(ConsumerGroupSummarySerializer):
    class Meta(ConsumerGroupSummarySerializer.Meta):
        fields = [*ConsumerGroupSummarySerializer.Meta.fields, "lag"]

    def to_representation(self, instance: ConsumerGroupLag) -> dict[str, Any]:
        return group_detail(instance)


class ConsumerGroupViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantOwnedViewSet):
    """Read-only: consumer groups of a tenant with their lag (names without the tenant prefix)."""

    lookup_field = "group"
    lookup_value_regex = "[^/]+"

    def get_serializer_class(self):  # type: ignore[no-untyped-def]
        if self.action == "retrieve":
            return ConsumerGroupDetailSerializer
        return ConsumerGroupSummarySerializer

    def tenant_queryset(self):  # type: ignore[no-untyped-def]
        groups = ConsumerGroupLag.objects.filter(tenant=self.tenant).order_by("group")
        return groups if self.action == "retrieve" else groups.defer("lag")  # summaries: no JSON
