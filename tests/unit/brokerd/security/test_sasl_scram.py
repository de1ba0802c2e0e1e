"""SCRAM-SHA-256/512 server exchange: RFC 7677's example, real round trips, and rejections."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokerd.security import (
    SUPPORTED_MECHANISMS,
    Principal,
    SaslStep,
    UnsupportedMechanism,
    UserCredentials,
    create_authenticator,
    parse_user_credentials,
)
from brokerd.security.sasl import INVALID_CREDENTIALS, ScramAuthenticator
from tests.unit.brokerd.security.known_users import (
    OPERATOR_SECRET,
    OPERATOR_USER,
    TENANT_KEY,
    TENANT_SECRET,
)
from tests.unit.brokerd.security.scram_client import (
    ScramClient,
    config_znode,
    credential_string,
    user_znode,
)

SCRAM = ["SCRAM-SHA-256", "SCRAM-SHA-512"]
SERVER_NONCE = "serverNonce"


def server(mechanism: str, users: dict[str, UserCredentials]) -> ScramAuthenticator:
    authenticator = create_authenticator(mechanism, users.get, nonce_factory=lambda: SERVER_NONCE)
    assert isinstance(authenticator, ScramAuthenticator)
    return authenticator


def assert_failed(step: SaslStep, code: str) -> None:
    assert step.done and step.principal is None
    assert step.failure is not None and step.failure.code == code
    assert step.response == f"e={code}".encode()


def test_rfc7677_example_exchange() -> None:
    """RFC 7677 section 3: user "user", password "pencil", byte for byte."""
    credential = credential_string("SCRAM-SHA-256", "pencil",
                                   base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="), 4096)
    users = {"user": parse_user_credentials("user", config_znode({"SCRAM-SHA-256": credential}))}
    scram = create_authenticator("SCRAM-SHA-256", users.get,
                                 nonce_factory=lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")

    first = scram.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert not first.done
    assert first.response == (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                              b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    final = scram.step(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                       b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert final.done and final.failure is None
    assert final.response == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert final.principal == Principal("user", None)


@pytest.mark.parametrize("mechanism", SCRAM)
def test_round_trip_authenticates_the_keys_principal(mechanism: str, users: dict) -> None:
    client = ScramClient(mechanism, TENANT_KEY, TENANT_SECRET)
    scram = create_authenticator(mechanism, users.get)  # real random server nonce
    challenge = scram.step(client.first())
    assert not challenge.done and challenge.username == TENANT_KEY
    result = scram.step(client.final(challenge.response))
    assert result.done and result.failure is None
    assert result.principal == Principal("acme.orders", "acme")  # the principal, not the key
    assert client.server_verified(result.response)


@pytest.mark.parametrize("mechanism", SCRAM)
def test_operator_user_has_no_tenant(mechanism: str, users: dict) -> None:
    client = ScramClient(mechanism, OPERATOR_USER, OPERATOR_SECRET)
    scram = server(mechanism, users)
    result = scram.step(client.final(scram.step(client.first()).response))
    assert result.principal == Principal(OPERATOR_USER, None)
    assert result.principal.is_operator


def test_server_nonces_differ_between_exchanges(users: dict) -> None:
    firsts = {create_authenticator("SCRAM-SHA-256", users.get).step(
        ScramClient("SCRAM-SHA-256", TENANT_KEY, TENANT_SECRET).first()).response for _ in range(3)}
    assert len(firsts) == 3


def test_matching_authzid_and_escaped_names_are_accepted() -> None:
    name = "we,ird=user"
    znode = user_znode("pw", principal=None, tenant=None)
    users = {name: parse_user_credentials(name, znode)}
    client = ScramClient("SCRAM-SHA-256", name, "pw", gs2_header="n,a=we=2Cird=3Duser,")
    scram = server("SCRAM-SHA-256", users)
    result = scram.step(client.final(scram.step(client.first()).response))
    assert result.principal == Principal(name, None)


@pytest.mark.parametrize("mechanism", SCRAM)
def test_wrong_password_is_an_invalid_proof(mechanism: str, users: dict) -> None:
    client = ScramClient(mechanism, TENANT_KEY, "not-the-secret")
    scram = server(mechanism, users)
    result = scram.step(client.final(scram.step(client.first()).response))
    assert_failed(result, "invalid-proof")
    assert result.failure is not None and result.failure.message == INVALID_CREDENTIALS


def test_unknown_user_fails_at_once_with_the_same_message(users: dict) -> None:
    result = server("SCRAM-SHA-256", users).step(ScramClient("SCRAM-SHA-256", "NOPE", "x").first())
    assert_failed(result, "unknown-user")
    assert result.failure is not None and result.failure.message == INVALID_CREDENTIALS
    assert result.username == "NOPE"


def test_user_without_this_mechanisms_credential_is_unknown() -> None:
    credential = credential_string("SCRAM-SHA-512", "pw", b"salt")
    users = {"u": parse_user_credentials("u", config_znode({"SCRAM-SHA-512": credential}))}
    scram = server("SCRAM-SHA-256", users)
    assert_failed(scram.step(ScramClient("SCRAM-SHA-256", "u", "pw").first()), "unknown-user")


def test_modified_nonce_is_rejected(users: dict) -> None:
    client = ScramClient("SCRAM-SHA-256", TENANT_KEY, TENANT_SECRET)
    scram = server("SCRAM-SHA-256", users)
    challenge = scram.step(client.first())
    final = client.final(challenge.response, nonce=client.nonce + "forged")
    assert_failed(scram.step(final), "other-error")


def test_old_librdkafka_doubled_client_nonce_is_accepted(users: dict) -> None:
    """librdkafka < 2.6.1 sends r=<client nonce><client nonce><server nonce>; kcat 1.7 does."""
    client = ScramClient("SCRAM-SHA-512", TENANT_KEY, TENANT_SECRET)
    scram = server("SCRAM-SHA-512", users)
    challenge = scram.step(client.first())
    doubled = client.nonce + client.nonce + SERVER_NONCE
    assert scram.step(client.final(challenge.response, nonce=doubled)).principal is not None
    other = server("SCRAM-SHA-512", users)
    challenge = other.step(client.first())
    tripled = client.nonce * 3 + SERVER_NONCE
    assert_failed(other.step(client.final(challenge.response, nonce=tripled)), "other-error")


def test_replayed_client_final_fails_against_a_new_server_nonce(users: dict) -> None:
    """A final recorded from one exchange is useless in the next: the server nonce changed."""
    client = ScramClient("SCRAM-SHA-256", TENANT_KEY, TENANT_SECRET)
    first_exchange = create_authenticator("SCRAM-SHA-256", users.get)
    recorded = client.final(first_exchange.step(client.first()).response)
    assert first_exchange.step(recorded).principal is not None
    replay = create_authenticator("SCRAM-SHA-256", users.get)
    replay.step(client.first())
    assert_failed(replay.step(recorded), "other-error")


def test_wrong_channel_binding_is_rejected(users: dict) -> None:
    client = ScramClient("SCRAM-SHA-256", TENANT_KEY, TENANT_SECRET)
    scram = server("SCRAM-SHA-256", users)
    challenge = scram.step(client.first())
    wrong = base64.b64encode(b"y,,").decode()
    assert_failed(scram.step(client.final(challenge.response, channel_binding=wrong)),
                  "channel-bindings-dont-match")


def test_truncated_proof_is_rejected(users: dict) -> None:
    client = ScramClient("SCRAM-SHA-512", TENANT_KEY, TENANT_SECRET)
    scram = server("SCRAM-SHA-512", users)
    final = client.final(scram.step(client.first()).response)
    without_proof = final.rsplit(b",p=", 1)[0]
    assert_failed(scram.step(without_proof + b",p=" + base64.b64encode(b"short")), "invalid-proof")


@pytest.mark.parametrize(("message", "code"), [
    (b"n,,n=K3YACMEORDERS000,r=abc,tokenauth=true", "extensions-not-supported"),
    (b"n,,m=ext,n=K3YACMEORDERS000,r=abc", "extensions-not-supported"),
    (b"p=tls-unique,,n=K3YACMEORDERS000,r=abc", "channel-binding-not-supported"),
    (b"x,,n=K3YACMEORDERS000,r=abc", "invalid-encoding"),
    (b"n,,n=K3YACMEORDERS000", "invalid-encoding"),
    (b"n,,r=abc,n=K3YACMEORDERS000", "invalid-encoding"),
    (b"n,,n=K3YACMEORDERS000,r=", "invalid-encoding"),
    (b"n,,n=K3YACMEORDERS000,r=ab\x7fc", "invalid-encoding"),
    (b"n,,n=bad=2Xescape,r=abc", "invalid-username-encoding"),
    (b"n,,n=,r=abc", "invalid-username-encoding"),
    (b"n,z=x,n=K3YACMEORDERS000,r=abc", "invalid-encoding"),
    (b"n,,n=\xff\xfe,r=abc", "invalid-encoding"),
    (b"", "invalid-encoding"),
    (b"n,a=someone-else,n=K3YACMEORDERS000,r=abc", "other-error"),
])
def test_malformed_client_first_is_a_failure(message: bytes, code: str, users: dict) -> None:
    assert_failed(server("SCRAM-SHA-256", users).step(message), code)


@pytest.mark.parametrize(("message", "code"), [
    (b"c=biws,r=clientNonce42serverNonce", "invalid-encoding"),
    (b"r=clientNonce42serverNonce,c=biws,p=AAAA", "invalid-encoding"),
    (b"c=biws,r=clientNonce42serverNonce,x=ext,p=AAAA", "extensions-not-supported"),
    (b"c=b!ws,r=clientNonce42serverNonce,p=AAAA", "invalid-encoding"),
    (b"c=biws,r=clientNonce42serverNonce,p=not base64", "invalid-encoding"),
])
def test_malformed_client_final_is_a_failure(message: bytes, code: str, users: dict) -> None:
    scram = server("SCRAM-SHA-256", users)
    scram.step(ScramClient("SCRAM-SHA-256", TENANT_KEY, TENANT_SECRET).first())
    assert_failed(scram.step(message), code)


@pytest.mark.parametrize("iterations", [4095, 16385])
def test_iteration_counts_outside_kafkas_bounds_are_refused(iterations: int) -> None:
    users = {"u": parse_user_credentials("u", user_znode("pw", principal=None, tenant=None,
                                                            iterations=iterations))}
    result = server("SCRAM-SHA-256", users).step(ScramClient("SCRAM-SHA-256", "u", "pw").first())
    assert_failed(result, "other-error")
    assert result.failure is not None and str(iterations) in result.failure.message


def test_no_step_after_the_exchange_is_done(users: dict) -> None:
    client = ScramClient("SCRAM-SHA-256", TENANT_KEY, TENANT_SECRET)
    scram = server("SCRAM-SHA-256", users)
    final = client.final(scram.step(client.first()).response)
    assert scram.step(final).principal is not None
    assert_failed(scram.step(final), "other-error")


def test_mechanism_names() -> None:
    assert SUPPORTED_MECHANISMS == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    with pytest.raises(UnsupportedMechanism):
        create_authenticator("GSSAPI", lambda _: None)
    with pytest.raises(UnsupportedMechanism):
        create_authenticator("scram-sha-256", lambda _: None)


@given(first=st.binary(max_size=80), final=st.binary(max_size=120))
def test_arbitrary_bytes_never_raise(first: bytes, final: bytes) -> None:
    users = {"u": parse_user_credentials("u", user_znode("pw", principal=None, tenant=None))}
    scram = create_authenticator("SCRAM-SHA-256", users.get)
    for message in (b"n,,n=u,r=x" + first, final, first):
        step = scram.step(message)
        assert step.principal is None
        assert step.done == (step.failure is not None)
