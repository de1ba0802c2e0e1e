"""/api/v1/tenants/<slug>/client-certificates/: mTLS certificates of service accounts.

POST ``{"principal": "<service account>"}`` signs a certificate ``CN=<tenant>.<account>``
with the deployment's CA and answers its PEM certificate and private key (the key is shown
only in this answer, never stored); GET lists serials, subjects, expiry and revocation;
DELETE revokes (the row stays, ``revoked_at`` set) and publishes the serial under
``/client-certs/revoked`` so brokers refuse it and close its connections.  503 when the
deployment has no CA key (``SSL_CA_KEY_LOCATION``).
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response

from .. import services
from ..models import ClientCertificate, Principal
from .access import call_service
from .views import TenantOwnedViewSet


class ClientCertificateSerializer(serializers.ModelSerializer):
    principal = serializers.CharField(source="principal.name")

    class Meta:
        model = ClientCertificate
        fields = ["serial", "principal", "subject", "not_after", "revoked_at", "created_at"]
        read_only_fields = ["serial", "subject", "not_after", "revoked_at", "created_at"]


class IssuedCertificateSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """The answer to an issue: the only time the private key is ever shown."""

    serial = serializers.CharField()
    subject = serializers.CharField()
    not_after = serializers.DateTimeField()
    certificate_pem = serializers.CharField()
    private_key_pem = serializers.CharField()
    kafka_principal = serializers.CharField()


class NoCertificateAuthority(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "this deployment has no CA to sign client certificates"


class ClientCertificateViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                               TenantOwnedViewSet):
    """Client certificates (mTLS) of a tenant's service accounts."""

    serializer_class = ClientCertificateSerializer
    lookup_field = "serial"

    def tenant_queryset(self):  # type: ignore[no-untyped-def]
        return ClientCertificate.objects.filter(principal__tenant=self.tenant).select_related(
            "principal__tenant").order_by("created_at")

    @extend_schema(responses={201: IssuedCertificateSerializer})
    def create(self, request: Request, tenant_slug: str) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        principal = get_object_or_404(Principal, tenant=self.tenant,
                                      name=serializer.validated_data["principal"]["name"])
        try:
            issued = call_service(services.issue_client_certificate, request.user, principal)
        except services.CertificateAuthorityMissing as exc:
            raise NoCertificateAuthority(str(exc)) from exc
        body = {"serial": issued.serial, "subject": issued.subject,
                "not_after": issued.not_after, "certificate_pem": issued.certificate_pem,
                "private_key_pem": issued.private_key_pem,
                "kafka_principal": f"User:{principal.kafka_user}"}
        return Response(IssuedCertificateSerializer(body).data, status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, tenant_slug: str, serial: str) -> Response:
        call_service(services.revoke_client_certificate, request.user, self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
