"""The SASL exchanges against kafka-python's own client mechanisms, byte for byte, no sockets.

kafka-python's SCRAM and PLAIN code is what that client sends to a real broker, so this
checks our server against a third-party implementation rather than only our test client.
"""

from __future__ import annotations

import pytest
from kafka.net.sasl.plain import SaslMechanismPlain
from kafka.net.sasl.scram import SaslMechanismScram

from brokerd.security import Principal, create_authenticator
from tests.unit.brokerd.security.known_users import TENANT_KEY, TENANT_SECRET


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_python_scram_client(mechanism: str, users: dict) -> None:
    client = SaslMechanismScram(sasl_plain_username=TENANT_KEY, sasl_plain_password=TENANT_SECRET,
                                sasl_mechanism=mechanism)
    server = create_authenticator(mechanism, users.get)
    challenge = server.step(client.auth_bytes())
    assert not challenge.done
    client.receive(challenge.response)
    result = server.step(client.auth_bytes())
    assert result.principal == Principal("acme.orders", "acme")
    assert client.receive(result.response)  # raises if our server signature were wrong
    assert client.is_authenticated()


def test_kafka_python_scram_client_with_a_wrong_secret_is_refused(users: dict) -> None:
    client = SaslMechanismScram(sasl_plain_username=TENANT_KEY, sasl_plain_password="wrong",
                                sasl_mechanism="SCRAM-SHA-256")
    server = create_authenticator("SCRAM-SHA-256", users.get)
    client.receive(server.step(client.auth_bytes()).response)
    result = server.step(client.auth_bytes())
    assert result.principal is None and result.failure is not None
    assert result.failure.code == "invalid-proof"


def test_kafka_python_plain_client(users: dict) -> None:
    """kafka-python sends the username as authzid too (``user NUL user NUL secret``)."""
    client = SaslMechanismPlain(sasl_plain_username=TENANT_KEY, sasl_plain_password=TENANT_SECRET)
    result = create_authenticator("PLAIN", users.get).step(client.auth_bytes())
    client.receive(result.response)
    assert client.is_authenticated()
    assert result.principal == Principal("acme.orders", "acme")
