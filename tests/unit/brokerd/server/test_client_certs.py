"""mTLS naming on the broker: a certificate's principal (tenant or operator), ANONYMOUS without
one, revoked serials refused at connect and closed when the revocation arrives."""

from __future__ import annotations

from typing import Any

from brokerd.security import ANONYMOUS, Principal
from brokerd.server.auth import SecurityState
from brokerd.server.client_certs import ClientCertificates, certificate_principal, normal_serial

PROPS = {"ssl.client.auth": "required", "ssl.truststore.location": "/ca.pem",
         "ssl.principal.mapping.rules": "RULE:^CN=([a-z0-9.-]+)(,.*)?$/$1/,DEFAULT"}


class FakeTransport:
    def __init__(self, certificate: dict[str, Any] | None) -> None:
        self.certificate = certificate

    def get_extra_info(self, name: str) -> Any:
        return self.certificate if name == "peercert" else None


class FakeConnection:
    def __init__(self, certificate: dict[str, Any] | None) -> None:
        self.transport = FakeTransport(certificate)
        self.principal: Principal | None = None
        self.namespace: Any = None
        self.closed_because: str | None = None

    @property
    def closed(self) -> bool:
        return self.closed_because is not None

    def close(self, reason: str) -> None:
        self.closed_because = reason


def certificate(common_name: str, serial: str = "0A1B") -> dict[str, Any]:
    return {"subject": ((("organizationName", "kafkasaas"),), (("commonName", common_name),)),
            "serialNumber": serial}


def security_with_tenant(slug: str = "acme") -> SecurityState:
    security = SecurityState(["User:ANONYMOUS"], 100)
    security.tenant_changed(slug, b'{"max_partitions": 10}')
    return security


def test_serials_compare_without_case_colons_or_leading_zeros() -> None:
    assert normal_serial("00:0a:1b") == normal_serial("A1B") == "A1B"
    assert normal_serial("0") == "0"


def test_principal_is_a_known_tenants_only_by_its_slug_prefix() -> None:
    def known(slug: str) -> bool:
        return slug == "acme"

    assert certificate_principal("acme.orders", known) == Principal("acme.orders", "acme")
    assert certificate_principal("globex.orders", known) == Principal("globex.orders", None)
    assert certificate_principal("acme.", known) == Principal("acme.", None)
    assert certificate_principal("localhost", known) == Principal("localhost", None)


def test_certificate_names_the_tenant_principal_and_its_namespace() -> None:
    certs = ClientCertificates(security_with_tenant(), PROPS)
    connection = FakeConnection(certificate("acme.orders"))
    certs.identify(connection)  # type: ignore[arg-type]
    assert connection.principal == Principal("acme.orders", "acme")
    assert connection.namespace.to_cluster("events") == "acme.events"


def test_no_certificate_or_auth_off_is_anonymous() -> None:
    certs = ClientCertificates(security_with_tenant(), {**PROPS, "ssl.client.auth": "requested"})
    connection = FakeConnection(None)
    certs.identify(connection)  # type: ignore[arg-type]
    assert connection.principal == ANONYMOUS
    off = ClientCertificates(security_with_tenant(), {})
    presented = FakeConnection(certificate("acme.orders"))
    off.identify(presented)  # type: ignore[arg-type]
    assert presented.principal == ANONYMOUS


def test_an_unmapped_dn_is_closed() -> None:
    certs = ClientCertificates(security_with_tenant(),
                               {**PROPS, "ssl.principal.mapping.rules": "RULE:^CN=x$/x/"})
    connection = FakeConnection(certificate("acme.orders"))
    certs.identify(connection)  # type: ignore[arg-type]
    assert connection.principal is None and "no ssl.principal.mapping.rules" in str(
        connection.closed_because)


def test_revocation_closes_live_connections_and_refuses_new_ones() -> None:
    certs = ClientCertificates(security_with_tenant(), PROPS)
    live, other = FakeConnection(certificate("acme.orders", "0A1B")), FakeConnection(
        certificate("acme.billing", "0C2D"))
    certs.identify(live)  # type: ignore[arg-type]
    certs.identify(other)  # type: ignore[arg-type]
    certs.revoked_changed(["a1b"])
    assert "revoked" in str(live.closed_because) and not other.closed
    again = FakeConnection(certificate("acme.orders", "0A1B"))
    certs.identify(again)  # type: ignore[arg-type]
    assert again.principal is None and "revoked" in str(again.closed_because)
    certs.revoked_changed([])  # un-revoked (the control plane removed the node)
    third = FakeConnection(certificate("acme.orders", "0A1B"))
    certs.identify(third)  # type: ignore[arg-type]
    assert third.principal == Principal("acme.orders", "acme")
