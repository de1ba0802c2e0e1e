"""REST endpoints for tenants and what they own. Views parse, authorise and call services."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from .. import services
from ..models import Acl, ApiKey, ClientId, Plan, Principal, Tenant, Topic
from . import serializers as s
from .access import (
    IsOperator,
    IsOperatorOrReadOnly,
    TenantWriteAccess,
    call_service,
    tenant_for,
    visible_tenants,
)


class PlanViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Plans: everyone signed in may read them; operators create and change them."""

    serializer_class = s.PlanSerializer
    permission_classes = [IsOperatorOrReadOnly]
    lookup_field = "slug"
    queryset = Plan.objects.order_by("slug")

    def create(self, request: Request) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        plan = call_service(services.create_plan, request.user, **serializer.validated_data)
        return Response(self.get_serializer(plan).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request: Request, slug: str) -> Response:
        plan = self.get_object()
        serializer = self.get_serializer(plan, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        plan = call_service(services.update_plan, request.user, plan, **serializer.validated_data)
        return Response(self.get_serializer(plan).data)


class TenantViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Tenants: operators manage all; a tenant admin sees only its own."""

    serializer_class = s.TenantSerializer
    lookup_field = "slug"

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return visible_tenants(self.request.user).select_related("plan").order_by("slug")

    def get_permissions(self):  # type: ignore[no-untyped-def]
        if self.action in ("create", "partial_update", "destroy"):
            return [IsOperator()]
        return super().get_permissions()

    def create(self, request: Request) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        tenant = call_service(services.create_tenant, request.user, slug=data["slug"],
                              name=data["name"], plan=data["plan"])
        return Response(self.get_serializer(tenant).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request: Request, slug: str) -> Response:
        tenant = self.get_object()
        serializer = self.get_serializer(tenant, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = {k: v for k, v in serializer.validated_data.items() if k != "slug"}
        tenant = call_service(services.update_tenant, request.user, tenant, **changes)
        return Response(self.get_serializer(tenant).data)

    def destroy(self, request: Request, slug: str) -> Response:
        call_service(services.delete_tenant, request.user, self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


class TenantOwnedViewSet(viewsets.GenericViewSet):
    """Base for /api/v1/tenants/<slug>/…: resolves (and authorises) the tenant from the URL;
    writes need a role that may change the tenant (read-only users get 403)."""

    permission_classes = [IsAuthenticated, TenantWriteAccess]

    def get_queryset(self):  # type: ignore[no-untyped-def]
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular inspecting, no request
            return self.get_serializer_class().Meta.model.objects.none()
        return self.tenant_queryset()

    def tenant_queryset(self):  # type: ignore[no-untyped-def]
        raise NotImplementedError

    @property
    def tenant(self) -> Tenant:
        if not hasattr(self, "_tenant"):
            self._tenant = tenant_for(self.request, self.kwargs["tenant_slug"])
        return self._tenant


class PrincipalViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantOwnedViewSet):
    """Service accounts of a tenant (console users are listed too, read-only)."""

    serializer_class = s.PrincipalSerializer
    lookup_field = "name"

    def tenant_queryset(self):  # type: ignore[no-untyped-def]
        return self.tenant.principals.select_related("tenant").order_by("name")

    def create(self, request: Request, tenant_slug: str) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        principal = call_service(services.create_principal, request.user, self.tenant,
                                 **serializer.validated_data)
        return Response(self.get_serializer(principal).data, status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, tenant_slug: str, name: str) -> Response:
        call_service(services.delete_principal, request.user, self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


class ApiKeyViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantOwnedViewSet):
    """API keys (SASL credentials) of a tenant's service accounts."""

    serializer_class = s.ApiKeySerializer
    lookup_field = "key"

    def tenant_queryset(self):  # type: ignore[no-untyped-def]
        return ApiKey.objects.filter(principal__tenant=self.tenant).select_related(
            "principal__tenant").order_by("created_at")

    @extend_schema(responses={201: s.ApiKeyCreatedSerializer})
    def create(self, request: Request, tenant_slug: str) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        principal = get_object_or_404(Principal, tenant=self.tenant,
                                      name=serializer.validated_data["principal"]["name"])
        api_key, secret = call_service(services.create_api_key, request.user, principal,
                                       description=serializer.validated_data.get("description", ""))
        api_key.secret = secret  # type: ignore[attr-defined]
        return Response(s.ApiKeyCreatedSerializer(api_key).data, status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, tenant_slug: str, key: str) -> Response:
        call_service(services.revoke_api_key, request.user, self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


class ClientIdViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantOwnedViewSet):
    serializer_class = s.ClientIdSerializer
    lookup_field = "client_id"
    lookup_value_regex = "[^/]+"

    def tenant_queryset(self):  # type: ignore[no-untyped-def]
        return ClientId.objects.filter(tenant=self.tenant).order_by("client_id")

    def create(self, request: Request, tenant_slug: str) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        entry = call_service(services.register_client_id, request.user, self.tenant,
                             **serializer.validated_data)
        return Response(self.get_serializer(entry).data, status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, tenant_slug: str, client_id: str) -> Response:
        call_service(services.delete_client_id, request.user, self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


class TopicViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantOwnedViewSet):
    """Topics as the tenant wants them; the brokers serve them under their physical names."""

    serializer_class = s.TopicSerializer
    lookup_field = "name"
    lookup_value_regex = "[^/]+"

    def tenant_queryset(self):  # type: ignore[no-untyped-def]
        return Topic.objects.filter(tenant=self.tenant).select_related("tenant").order_by("name")

    def create(self, request: Request, tenant_slug: str) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        topic = call_service(services.create_topic, request.user, self.tenant,
                             **serializer.validated_data)
        return Response(self.get_serializer(topic).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.TopicUpdateSerializer, responses=s.TopicSerializer)
    def partial_update(self, request: Request, tenant_slug: str, name: str) -> Response:
        topic = self.get_object()
        serializer = s.TopicUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        topic = call_service(services.update_topic, request.user, topic, **serializer.validated_data)
        return Response(self.get_serializer(topic).data)

    def destroy(self, request: Request, tenant_slug: str, name: str) -> Response:
        call_service(services.delete_topic, request.user, self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)




class AclViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantOwnedViewSet):
    """Allow rules for the tenant's principals on the tenant's topics, groups and ids."""

    serializer_class = s.AclSerializer

    def tenant_queryset(self):  # type: ignore[no-untyped-def]
        return Acl.objects.filter(tenant=self.tenant).select_related("principal__tenant").order_by("id")

    def create(self, request: Request, tenant_slug: str) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        principal = get_object_or_404(Principal, tenant=self.tenant, name=data.pop("principal")["name"])
        acl = call_service(services.grant_acl, request.user, self.tenant, principal=principal, **data)
        return Response(self.get_serializer(acl).data, status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, tenant_slug: str, pk: str) -> Response:
        call_service(services.revoke_acl, request.user, self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
