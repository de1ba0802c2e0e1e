"""How a broker proves itself to another broker: TLS settings and a SASL client login.

Why in the replication layer: followers (and the transaction coordinator's marker writer)
open connections to other brokers over the listener named ``inter.broker.listener.name``;
when that listener is SSL or SASL_SSL the connection is TLS, and when it is SASL_* the broker
logs in like any client would.  The keys are Kafka's (docs/brokerd.md, "Inter-broker
security"):

- ``ssl.truststore.location`` — PEM bundle of the CAs a leader's certificate must chain to
  (Kafka: ``ssl.truststore.type=PEM``); absent: the system's default CAs;
- ``ssl.endpoint.identification.algorithm`` — ``https`` (Kafka's default) checks the
  leader's certificate names the host it advertises; empty turns the check off;
- ``ssl.keystore.location`` — the broker's own key and certificate, presented to the leader
  when its SSL listener asks for client certificates (``ssl.client.auth``);
- ``sasl.mechanism.inter.broker.protocol`` — PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (Kafka's
  default GSSAPI is not implemented, so a SASL inter-broker listener must name one);
- ``listener.name.<listener>.<mechanism>.sasl.jaas.config`` (lower-case listener and
  mechanism, Kafka's per-listener form) or ``sasl.jaas.config`` — a JAAS line whose
  ``username="…"`` and ``password="…"`` options are the broker's credentials.

Everything here but :func:`client_tls_context` and :func:`authenticate` is pure.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brokerd.protocol import ApiKey

TLS_LISTENERS = ("SSL", "SASL_SSL")
SASL_LISTENERS = ("SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# One JAAS option: name="quoted value" (backslash escapes a quote) or name=bare-word.
_JAAS_OPTION = re.compile(r'([A-Za-z_][\w.-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


class InterBrokerAuthError(ValueError):
    """The inter-broker security keys are inconsistent; the message names the key."""


@dataclass(frozen=True)
class InterBrokerAuth:
    """What a connection to another broker needs: TLS (with what trust) and/or a SASL login."""

    listener: str
    truststore: Path | None = None
    keystore: Path | None = None
    check_hostname: bool = True
    mechanism: str | None = None
    username: str = ""
    password: str = ""

    @property
    def tls(self) -> bool:
        return self.listener in TLS_LISTENERS

    @property
    def sasl(self) -> bool:
        return self.mechanism is not None


def jaas_options(text: str) -> dict[str, str]:
    """The ``name=value`` options of a JAAS line such as
    ``org.apache.kafka.common.security.scram.ScramLoginModule required username="b" password="s";``
    (the login module and control flag are ignored: the mechanism names the exchange)."""
    options: dict[str, str] = {}
    for match in _JAAS_OPTION.finditer(text):
        quoted, bare = match.group(2), match.group(3)
        options[match.group(1)] = (re.sub(r"\\(.)", r"\1", quoted) if quoted is not None
                                   else bare)
    return options


def inter_broker_auth(props: Mapping[str, str], listener: str) -> InterBrokerAuth:
    """The inter-broker settings for ``listener`` (its name is its security protocol) from
    the broker's properties; raises :class:`InterBrokerAuthError`."""
    truststore = props.get("ssl.truststore.location") or None
    keystore = props.get("ssl.keystore.location") or None
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if algorithm not in ("", "https"):
        raise InterBrokerAuthError(
            f"ssl.endpoint.identification.algorithm: {algorithm!r} is not https or empty")
    auth = InterBrokerAuth(listener, Path(truststore) if truststore else None,
                           Path(keystore) if keystore else None, algorithm == "https")
    if listener not in SASL_LISTENERS:
        return auth
    mechanism = props.get("sasl.mechanism.inter.broker.protocol", "GSSAPI").strip().upper()
    if mechanism not in MECHANISMS:
        raise InterBrokerAuthError(
            f"sasl.mechanism.inter.broker.protocol: {mechanism!r} is not one of {MECHANISMS} "
            f"(needed by inter.broker.listener.name={listener})")
    per_listener = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    jaas = props.get(per_listener) or props.get("sasl.jaas.config")
    options = jaas_options(jaas or "")
    if not options.get("username") or "password" not in options:
        raise InterBrokerAuthError(
            f"{per_listener} (or sasl.jaas.config) must give username=\"…\" password=\"…\" "
            f"for the inter-broker {mechanism} login")
    return InterBrokerAuth(listener, auth.truststore, auth.keystore, auth.check_hostname,
                           mechanism, options["username"], options["password"])


def client_tls_context(auth: InterBrokerAuth) -> ssl.SSLContext:
    """A TLS client context verifying leaders against the truststore, presenting the
    broker's own certificate (if it has one) for listeners that ask for it."""
    context = ssl.create_default_context(
        ssl.Purpose.SERVER_AUTH, cafile=str(auth.truststore) if auth.truststore else None)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = auth.check_hostname
    if auth.keystore is not None:
        context.load_cert_chain(str(auth.keystore))
    return context


# ---- the client side of SASL (pure message building) ------------------------------------


def plain_token(username: str, password: str) -> bytes:
    """RFC 4616: ``authzid NUL authcid NUL passwd`` with an empty authzid."""
    return b"\0" + username.encode() + b"\0" + password.encode()


class ScramLogin:
    """The client half of one SCRAM exchange (RFC 5802), without channel binding."""

    def __init__(self, mechanism: str, username: str, password: str,
                 nonce: str | None = None) -> None:
        self._hash = _SCRAM_HASHES[mechanism]
        self._password = password.encode()
        self._nonce = nonce or secrets.token_urlsafe(24)
        name = username.replace("=", "=3D").replace(",", "=2C")
        self._bare = f"n={name},r={self._nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        """The client-final message answering ``server_first``; raises ValueError when the
        server's message is malformed or does not extend our nonce."""
        text = server_first.decode()
        fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
        if not fields.get("r", "").startswith(self._nonce) or "s" not in fields:
            raise ValueError(f"unexpected SCRAM server-first message {text!r}")
        salt, iterations = base64.b64decode(fields["s"]), int(fields["i"])
        salted = hashlib.pbkdf2_hmac(self._hash, self._password, salt, iterations)
        client_key = hmac.new(salted, b"Client Key", self._hash).digest()
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c=biws,r={fields['r']}"  # biws = base64("n,,")
        message = f"{self._bare},{text},{without_proof}".encode()
        signature = hmac.new(stored_key, message, self._hash).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.new(salted, b"Server Key", self._hash).digest()
        self._server_signature = hmac.new(server_key, message, self._hash).digest()
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verified(self, server_final: bytes) -> bool:
        """Whether the server proved it knows our credential (``v=<ServerSignature>``)."""
        expected = b"v=" + base64.b64encode(self._server_signature)
        return bool(self._server_signature) and hmac.compare_digest(server_final, expected)


Request = Callable[[int, int, dict[str, Any]], Awaitable[dict[str, Any]]]


async def authenticate(request: Request, auth: InterBrokerAuth) -> int:
    """SaslHandshake v1 + SaslAuthenticate v2 round trips through ``request``; returns the
    session lifetime the broker granted (ms, 0: forever; KIP-368).  Raises ConnectionError
    naming the broker's answer when the login fails."""
    assert auth.mechanism is not None
    answer = await request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": auth.mechanism})
    if answer["error_code"]:
        raise ConnectionError(f"SaslHandshake {auth.mechanism} refused (error "
                              f"{answer['error_code']}; enabled: {answer['mechanisms']})")

    lifetime_ms = 0

    async def step(token: bytes) -> bytes:
        nonlocal lifetime_ms
        reply = await request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
        if reply["error_code"]:
            raise ConnectionError(f"inter-broker login as {auth.username!r} failed: "
                                  f"{reply['error_message']} (error {reply['error_code']})")
        lifetime_ms = int(reply.get("session_lifetime_ms") or 0)
        return bytes(reply["auth_bytes"])

    if auth.mechanism == "PLAIN":
        await step(plain_token(auth.username, auth.password))
        return lifetime_ms
    login = ScramLogin(auth.mechanism, auth.username, auth.password)
    server_first = await step(login.first())
    try:
        client_final = login.final(server_first)
    except ValueError as exc:
        raise ConnectionError(str(exc)) from exc
    if not login.verified(await step(client_final)):
        raise ConnectionError("the leader's SCRAM server signature does not verify")
    return lifetime_ms
