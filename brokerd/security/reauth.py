"""SASL session lifetime and re-authentication (KIP-368), as pure rules.

Why: without a lifetime, a connection authenticated once stays authorized for as long as it
lives, so a rotated secret (or a key revoked while the broker-side sweep is not running)
keeps working on it.  With ``connections.max.reauth.ms`` > 0 every successful
SaslAuthenticate tells the client its ``session_lifetime_ms``; a client that supports it
(SaslAuthenticate v1+: librdkafka, the Java client) re-runs SaslHandshake and
SaslAuthenticate on the same connection before then, against the current credentials.

Kafka's rules, followed here (``SaslServerAuthenticator`` and ``SocketServer``):

* The lifetime is ``connections.max.reauth.ms`` (0: none, the answer says 0), or its
  listener- and mechanism-prefixed override
  ``listener.name.<listener>.<mechanism>.connections.max.reauth.ms`` (lower-case names, e.g.
  ``listener.name.sasl_ssl.scram-sha-512.connections.max.reauth.ms``); the session expires
  that long after the exchange completed, counted by the broker's clock.
* Once expired, the next request closes the connection, unless it is a SaslHandshake that
  begins a re-authentication (or the SaslAuthenticate continuing one).  An idle expired
  connection is left to ``connections.max.idle.ms``, as in Kafka.
* Only a client that authenticated with SaslAuthenticate v1+ may re-authenticate; an older
  one (v0, or raw v0 tokens) is closed at expiry, and its SaslHandshake on an authenticated
  connection is answered ILLEGAL_SASL_STATE.
* A re-authentication must use the same mechanism and end with the same principal; either
  change fails it with SASL_AUTHENTICATION_FAILED and the connection closes, as does a
  wrong or revoked secret.

Time is passed in (monotonic seconds), so every rule is a millisecond unit test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from brokerd.security.principal import Principal


@dataclass(frozen=True)
class SaslSession:
    """What a connection keeps of its last completed SASL exchange."""

    mechanism: str
    principal: Principal
    can_reauthenticate: bool
    expires_at: float | None  # monotonic seconds; None: the session never expires

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at


REAUTH_KEY = "connections.max.reauth.ms"


def prefixed_reauth_key(listener: str, mechanism: str) -> str:
    return f"listener.name.{listener.lower()}.{mechanism.lower()}.{REAUTH_KEY}"


def max_reauth_ms(props: Mapping[str, str], default_ms: int, listener: str,
                  mechanism: str) -> int:
    """The ``connections.max.reauth.ms`` in force for one listener and mechanism."""
    value = props.get(prefixed_reauth_key(listener, mechanism))
    return default_ms if value is None else int(value)


def invalid_prefixed_values(props: Mapping[str, str]) -> list[str]:
    """Prefixed ``connections.max.reauth.ms`` keys whose value is no integer >= 0."""
    bad = []
    for key, value in props.items():
        if key.startswith("listener.name.") and key.endswith("." + REAUTH_KEY):
            try:
                if int(value) < 0:
                    bad.append(key)
            except ValueError:
                bad.append(key)
    return sorted(bad)


def session_lifetime_ms(max_reauth_ms: int) -> int:
    """The ``session_lifetime_ms`` to answer (0: no lifetime, never re-authenticate)."""
    return max(0, max_reauth_ms)


def new_session(mechanism: str, principal: Principal, authenticate_version: int | None,
                max_reauth_ms: int, now: float) -> SaslSession:
    """The session an exchange that completed at ``now`` starts.  ``authenticate_version``:
    the SaslAuthenticate version the client used, None for raw v0 tokens."""
    lifetime_ms = session_lifetime_ms(max_reauth_ms)
    return SaslSession(
        mechanism, principal,
        can_reauthenticate=authenticate_version is not None and authenticate_version >= 1,
        expires_at=now + lifetime_ms / 1000 if lifetime_ms else None)


def may_serve(session: SaslSession | None, now: float, *, begins_reauthentication: bool,
              continues_authentication: bool) -> bool:
    """Whether a request may be processed on a connection holding ``session``: always
    before expiry; after it only the SASL requests of a re-authentication."""
    if session is None or not session.expired(now):
        return True
    if continues_authentication:
        return True
    return begins_reauthentication and session.can_reauthenticate


def may_begin_reauthentication(session: SaslSession | None) -> bool:
    """Whether a SaslHandshake on an authenticated connection starts a re-authentication
    (else it is answered ILLEGAL_SASL_STATE)."""
    return session is not None and session.can_reauthenticate


def mechanism_refusal(previous: SaslSession | None, mechanism: str) -> str | None:
    """Why a re-authentication with ``mechanism`` fails at its first SaslAuthenticate (Kafka
    answers the handshake and refuses the token), or None."""
    if previous is None or mechanism == previous.mechanism:
        return None
    return (f"SASL mechanism '{mechanism}' requested by client is not supported for "
            f"re-authentication of mechanism '{previous.mechanism}'")


def principal_refusal(previous: SaslSession | None, principal: Principal) -> str | None:
    """Why a completed re-authentication fails although the secret was right: it names
    another principal (Kafka's wording), or None."""
    if previous is None or principal == previous.principal:
        return None
    return (f"Cannot change principals during re-authentication from "
            f"{previous.principal.kafka_principal}: {principal.kafka_principal}")
