"""REST endpoints for quota overrides.

``/api/v1/tenants/<slug>/quotas/``: a tenant's overrides, always for one of its principals
(optionally per client id).  ``/api/v1/quotas/``: operators' cluster-wide entities
(``<default>`` user, client-id only) and everything else.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from tenants.api.access import IsOperator, call_service
from tenants.api.views import TenantOwnedViewSet
from tenants.models import Principal

from . import services
from .models import Invoice, InvoiceLine, QuotaOverride

LIMITS = ["producer_byte_rate", "consumer_byte_rate", "request_percentage"]


class QuotaSerializer(serializers.ModelSerializer):
    principal = serializers.CharField(source="principal.name", required=False, allow_null=True)
    user = serializers.CharField(read_only=True)

    class Meta:
        model = QuotaOverride
        fields = ["id", "entity_path", "principal", "user", "default_user", "client_id", *LIMITS]
        read_only_fields = ["id", "entity_path"]


class TenantQuotaSerializer(QuotaSerializer):
    principal = serializers.CharField(source="principal.name")

    class Meta(QuotaSerializer.Meta):
        read_only_fields = ["id", "entity_path", "default_user"]


def _limits(data: dict) -> dict:
    return {field: data.get(field) for field in LIMITS}


class TenantQuotaViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantOwnedViewSet):
    serializer_class = TenantQuotaSerializer

    def tenant_queryset(self):  # type: ignore[no-untyped-def]
        return self.tenant.quota_overrides.select_related("principal__tenant").order_by("entity_path")

    def create(self, request: Request, tenant_slug: str) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        principal = get_object_or_404(Principal, tenant=self.tenant, name=data["principal"]["name"])
        override = call_service(services.set_quota, request.user, tenant=self.tenant,
                                principal=principal, client_id=data.get("client_id", ""),
                                **_limits(data))
        return Response(self.get_serializer(override).data, status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, tenant_slug: str, pk: str) -> Response:
        call_service(services.delete_quota, request.user, self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


class ClusterQuotaViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = QuotaSerializer
    permission_classes = [IsOperator]
    queryset = QuotaOverride.objects.select_related("principal__tenant").order_by("entity_path")

    def create(self, request: Request) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if (data.get("principal") or {}).get("name"):
            raise serializers.ValidationError(
                {"principal": "set principals' quotas under /api/v1/tenants/<slug>/quotas/"})
        override = call_service(services.set_quota, request.user, tenant=None, principal=None,
                                default_user=data.get("default_user", False),
                                client_id=data.get("client_id", ""), **_limits(data))
        return Response(self.get_serializer(override).data, status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, pk: str) -> Response:
        call_service(services.delete_quota, request.user, self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


class InvoiceLineSerializer(serializers.ModelSerializer):
    class Meta:
        model = InvoiceLine
        fields = ["line", "dimension", "unit", "usage", "quantity", "free", "billable", "amount"]


class InvoiceSerializer(serializers.ModelSerializer):
    lines = InvoiceLineSerializer(many=True, read_only=True)

    class Meta:
        model = Invoice
        fields = ["month", "plan", "currency", "period_start", "period_end", "total", "lines"]


class InvoiceViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantOwnedViewSet):
    """A tenant's invoices, newest first, as the monthly billing job computed them."""

    serializer_class = InvoiceSerializer
    lookup_field = "month"
    lookup_value_regex = r"\d{4}-\d{2}"

    def tenant_queryset(self):  # type: ignore[no-untyped-def]
        return self.tenant.invoices.prefetch_related("lines").order_by("-month")
