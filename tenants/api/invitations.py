"""REST: ``/api/v1/tenants/<slug>/invitations/`` — a tenant's console users and invitations.

``GET`` lists the console users (role, whether the invitation is still pending); ``POST``
``{"email", "role": "admin" | "read_only"}`` invites one (operators: any tenant; a tenant's
admins: their own; read-only users: 403).  The answer carries ``accept_url`` only where
settings show invitation links (development); otherwise the link travels by e-mail only.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from .. import invitations
from ..models import Principal
from .access import call_service
from .views import TenantOwnedViewSet


class ConsoleUserSerializer(serializers.ModelSerializer):
    email = serializers.EmailField(source="user.email")
    # validated by the service (a second enum of the role field would collide in the schema)
    role = serializers.CharField(max_length=10, help_text="admin or read_only")
    pending = serializers.SerializerMethodField()

    class Meta:
        model = Principal
        fields = ["name", "email", "role", "pending", "created_at"]
        read_only_fields = ["name", "pending", "created_at"]

    def get_pending(self, principal: Principal) -> bool:
        return principal.user is not None and invitations.is_pending(principal.user)


class InvitationCreatedSerializer(ConsoleUserSerializer):
    accept_url = serializers.CharField(required=False, help_text="development settings only")

    class Meta(ConsoleUserSerializer.Meta):
        fields = [*ConsoleUserSerializer.Meta.fields, "accept_url"]


class InvitationViewSet(mixins.ListModelMixin, TenantOwnedViewSet):
    serializer_class = ConsoleUserSerializer

    def tenant_queryset(self):  # type: ignore[no-untyped-def]
        return self.tenant.principals.filter(kind=Principal.USER).select_related("user").order_by("name")

    @extend_schema(responses={201: InvitationCreatedSerializer})
    def create(self, request: Request, tenant_slug: str) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        invitation = call_service(invitations.invite, request.user, self.tenant,
                                  email=serializer.validated_data["user"]["email"],
                                  role=serializer.validated_data["role"],
                                  site_url=request.build_absolute_uri("/"))
        data: dict[str, Any] = dict(ConsoleUserSerializer(invitation.principal).data)
        if getattr(settings, "SHOW_INVITATION_LINKS", False):
            data["accept_url"] = invitation.accept_url
        return Response(data, status=status.HTTP_201_CREATED)
