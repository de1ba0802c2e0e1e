"""brokerd.security.reauth: KIP-368 session lifetime and re-authentication rules."""

from __future__ import annotations

from brokerd.security import Principal
from brokerd.security.reauth import (
    invalid_prefixed_values,
    max_reauth_ms,
    may_begin_reauthentication,
    may_serve,
    mechanism_refusal,
    new_session,
    principal_refusal,
    session_lifetime_ms,
)

ALICE = Principal("acme.alice", "acme")
BOB = Principal("acme.bob", "acme")
SCRAM = "SCRAM-SHA-512"


def test_lifetime_is_the_configured_maximum_and_zero_means_none() -> None:
    assert session_lifetime_ms(60_000) == 60_000
    assert session_lifetime_ms(0) == 0
    assert new_session(SCRAM, ALICE, 2, 0, now=100.0).expires_at is None


def test_session_expires_its_lifetime_after_the_exchange() -> None:
    session = new_session(SCRAM, ALICE, 2, 1_500, now=100.0)
    assert session.expires_at == 101.5
    assert not session.expired(101.49) and session.expired(101.5)


def test_only_saslauthenticate_v1_clients_may_reauthenticate() -> None:
    assert new_session(SCRAM, ALICE, 1, 1000, 0.0).can_reauthenticate
    assert not new_session(SCRAM, ALICE, 0, 1000, 0.0).can_reauthenticate
    assert not new_session(SCRAM, ALICE, None, 1000, 0.0).can_reauthenticate  # raw v0 tokens
    assert not may_begin_reauthentication(None)


def test_an_expired_session_serves_only_a_reauthentication() -> None:
    session = new_session(SCRAM, ALICE, 2, 1000, now=0.0)
    plain = {"begins_reauthentication": False, "continues_authentication": False}
    assert may_serve(session, 0.5, **plain)
    assert not may_serve(session, 1.0, **plain)
    assert may_serve(session, 5.0, begins_reauthentication=True, continues_authentication=False)
    assert may_serve(session, 5.0, begins_reauthentication=False, continues_authentication=True)
    assert may_serve(None, 5.0, **plain)  # not a SASL connection


def test_an_old_client_is_closed_at_expiry_even_if_it_sends_a_handshake() -> None:
    session = new_session(SCRAM, ALICE, 0, 1000, now=0.0)
    assert not may_serve(session, 2.0, begins_reauthentication=True,
                         continues_authentication=False)


def test_reauthentication_keeps_mechanism_and_principal() -> None:
    session = new_session(SCRAM, ALICE, 2, 1000, now=0.0)
    assert mechanism_refusal(session, SCRAM) is None
    assert mechanism_refusal(None, "PLAIN") is None  # a first authentication
    assert "re-authentication of mechanism 'SCRAM-SHA-512'" in (
        mechanism_refusal(session, "PLAIN") or "")
    assert principal_refusal(session, ALICE) is None
    assert "Cannot change principals" in (principal_refusal(session, BOB) or "")


def test_a_listener_and_mechanism_may_have_their_own_lifetime() -> None:
    props = {"listener.name.sasl_ssl.scram-sha-512.connections.max.reauth.ms": "60000"}
    assert max_reauth_ms(props, 0, "SASL_SSL", "SCRAM-SHA-512") == 60_000
    assert max_reauth_ms(props, 0, "SASL_SSL", "PLAIN") == 0
    assert max_reauth_ms(props, 5, "SASL_PLAINTEXT", "SCRAM-SHA-512") == 5
    assert invalid_prefixed_values(props) == []
    assert invalid_prefixed_values({
        "listener.name.x.plain.connections.max.reauth.ms": "-1",
        "listener.name.y.plain.connections.max.reauth.ms": "soon",
        "connections.max.reauth.ms": "-1"}) == [
        "listener.name.x.plain.connections.max.reauth.ms",
        "listener.name.y.plain.connections.max.reauth.ms"]
