"""Inter-broker security settings (Kafka's keys, JAAS options) and the SASL client side,
checked against RFC 7677's published exchange and the broker's own SCRAM server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from brokerd.protocol import ApiKey
from brokerd.replication.inter_broker_auth import (
    InterBrokerAuthError,
    ScramLogin,
    authenticate,
    inter_broker_auth,
    jaas_options,
    plain_token,
)
from brokerd.security import create_authenticator, parse_user_credentials
from tests.unit.brokerd.security.scram_client import config_znode, credential_string

SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              'username="broker" password="s3cr\\"et";')


def test_jaas_options_reads_quoted_and_bare_values() -> None:
    assert jaas_options(SCRAM_JAAS) == {"username": "broker", "password": 's3cr"et'}
    assert jaas_options("PlainLoginModule required username=admin password=\"a b\";") == {
        "username": "admin", "password": "a b"}


def test_plaintext_listener_needs_nothing() -> None:
    auth = inter_broker_auth({}, "PLAINTEXT")
    assert not auth.tls and not auth.sasl


def test_ssl_listener_takes_the_truststore_and_hostname_check() -> None:
    auth = inter_broker_auth({"ssl.truststore.location": "/ca.pem",
                              "ssl.keystore.location": "/broker.pem",
                              "ssl.endpoint.identification.algorithm": ""}, "SSL")
    assert auth.tls and not auth.sasl
    assert auth.truststore == Path("/ca.pem") and auth.keystore == Path("/broker.pem")
    assert not auth.check_hostname


def test_sasl_ssl_prefers_the_per_listener_jaas_line() -> None:
    auth = inter_broker_auth({
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "sasl.jaas.config": 'x required username="other" password="p";'}, "SASL_SSL")
    assert (auth.tls, auth.mechanism, auth.username, auth.password) == (
        True, "SCRAM-SHA-512", "broker", 's3cr"et')


def test_broker_wide_jaas_line_is_the_fallback() -> None:
    auth = inter_broker_auth({"sasl.mechanism.inter.broker.protocol": "PLAIN",
                              "sasl.jaas.config": 'x required username="b" password="p";'},
                             "SASL_PLAINTEXT")
    assert (auth.tls, auth.mechanism, auth.username) == (False, "PLAIN", "b")


@pytest.mark.parametrize("props, key", [
    ({}, "sasl.mechanism.inter.broker.protocol"),  # Kafka's default GSSAPI is not built
    ({"sasl.mechanism.inter.broker.protocol": "OAUTHBEARER"}, "OAUTHBEARER"),
    ({"sasl.mechanism.inter.broker.protocol": "PLAIN"}, "sasl.jaas.config"),
    ({"sasl.mechanism.inter.broker.protocol": "PLAIN",
      "sasl.jaas.config": 'x required password="p";'}, "username"),
])
def test_sasl_listener_refuses_incomplete_settings(props: dict[str, str], key: str) -> None:
    with pytest.raises(InterBrokerAuthError, match=key):
        inter_broker_auth(props, "SASL_SSL")


def test_unknown_identification_algorithm_is_refused() -> None:
    with pytest.raises(InterBrokerAuthError, match="identification"):
        inter_broker_auth({"ssl.endpoint.identification.algorithm": "ldaps"}, "SSL")


def test_plain_token_is_rfc4616() -> None:
    assert plain_token("b", "p") == b"\0b\0p"


def test_scram_login_reproduces_rfc7677_exchange() -> None:
    """RFC 7677 section 3: user "user", password "pencil", the published messages."""
    login = ScramLogin("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert login.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = login.final(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                        b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert login.verified(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    assert not login.verified(b"v=AAAA")


def test_scram_login_refuses_a_server_that_ignores_its_nonce() -> None:
    login = ScramLogin("SCRAM-SHA-512", "user", "pencil", nonce="mine")
    with pytest.raises(ValueError, match="server-first"):
        login.final(b"r=theirs,s=c2FsdA==,i=4096")


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_authenticate_logs_in_against_the_broker_mechanisms(mechanism: str) -> None:
    credential = {m: credential_string(m, "pw", b"salt-" + m.encode())
                  for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")}
    users = {"broker": parse_user_credentials("broker", config_znode(credential))}
    server = create_authenticator(mechanism, users.get)
    seen: list[int] = []

    async def request(api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        seen.append(api_key)
        if api_key == ApiKey.SASL_HANDSHAKE:
            return {"error_code": 0, "mechanisms": [mechanism]}
        step = server.step(body["auth_bytes"])
        failed = step.done and step.principal is None
        return {"error_code": 58 if failed else 0, "error_message": "no",
                "auth_bytes": step.response, "session_lifetime_ms": 60_000}

    auth = inter_broker_auth({"sasl.mechanism.inter.broker.protocol": mechanism,
                              "sasl.jaas.config": 'm required username="broker" password="pw";'},
                             "SASL_SSL")
    assert asyncio.run(authenticate(request, auth)) == 60_000
    assert seen[0] == ApiKey.SASL_HANDSHAKE and seen[1:] == [ApiKey.SASL_AUTHENTICATE] * (
        1 if mechanism == "PLAIN" else 2)

    wrong = inter_broker_auth({"sasl.mechanism.inter.broker.protocol": mechanism,
                               "sasl.jaas.config": 'm required username="broker" password="x";'},
                              "SASL_SSL")
    server = create_authenticator(mechanism, users.get)
    with pytest.raises(ConnectionError, match="login as 'broker' failed"):
        asyncio.run(authenticate(request, wrong))
