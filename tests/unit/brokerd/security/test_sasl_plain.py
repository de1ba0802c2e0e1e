"""PLAIN (RFC 4616) checked against the stored SCRAM credential, never a clear secret."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokerd.security import Principal, SaslStep, create_authenticator, parse_user_credentials
from brokerd.security.sasl import INVALID_CREDENTIALS
from tests.unit.brokerd.security.known_users import (
    OPERATOR_SECRET,
    OPERATOR_USER,
    TENANT_KEY,
    TENANT_SECRET,
)
from tests.unit.brokerd.security.scram_client import config_znode, credential_string, user_znode


def plain(users: dict, message: bytes) -> SaslStep:
    return create_authenticator("PLAIN", users.get).step(message)


def assert_failed(step: SaslStep, code: str) -> None:
    assert step.done and step.principal is None and step.response == b""
    assert step.failure is not None and step.failure.code == code


def test_right_password_authenticates_the_keys_principal(users: dict) -> None:
    step = plain(users, f"\0{TENANT_KEY}\0{TENANT_SECRET}".encode())
    assert step.done and step.failure is None and step.response == b""
    assert step.principal == Principal("acme.orders", "acme")
    assert step.username == TENANT_KEY


def test_authzid_equal_to_the_username_is_accepted(users: dict) -> None:
    step = plain(users, f"{OPERATOR_USER}\0{OPERATOR_USER}\0{OPERATOR_SECRET}".encode())
    assert step.principal == Principal(OPERATOR_USER, None)


def test_sha512_only_credentials_work() -> None:
    users = {"u": parse_user_credentials(
        "u", config_znode({"SCRAM-SHA-512": credential_string("SCRAM-SHA-512", "pw", b"salty")}))}
    assert plain(users, b"\0u\0pw").principal == Principal("u", None)
    assert_failed(plain(users, b"\0u\0pX"), "invalid-proof")


def test_wrong_password_and_unknown_user_look_the_same_to_the_client(users: dict) -> None:
    wrong = plain(users, f"\0{TENANT_KEY}\0nope".encode())
    unknown = plain(users, b"\0NOBODY\0nope")
    assert_failed(wrong, "invalid-proof")
    assert_failed(unknown, "unknown-user")
    assert wrong.failure is not None and unknown.failure is not None
    assert wrong.failure.message == unknown.failure.message == INVALID_CREDENTIALS
    assert unknown.username == "NOBODY"  # for the broker's own log


@pytest.mark.parametrize(("message", "code"), [
    (b"", "invalid-encoding"),
    (b"user-only", "invalid-encoding"),
    (b"\0user", "invalid-encoding"),
    (b"\0user\0pw\0extra", "invalid-encoding"),
    (b"\0\0pw", "invalid-encoding"),
    (b"\0user\0", "invalid-encoding"),
    (b"\0\xff\xfe\0pw", "invalid-encoding"),
    (f"someone-else\0{TENANT_KEY}\0{TENANT_SECRET}".encode(), "other-error"),
])
def test_malformed_messages_are_failures(message: bytes, code: str, users: dict) -> None:
    assert_failed(plain(users, message), code)


def test_iterations_below_the_minimum_are_refused_even_with_the_right_password() -> None:
    users = {"u": parse_user_credentials("u", user_znode("pw", principal=None, tenant=None,
                                                            iterations=1024))}
    assert_failed(plain(users, b"\0u\0pw"), "other-error")


def test_single_message_then_finished(users: dict) -> None:
    authenticator = create_authenticator("PLAIN", users.get)
    message = f"\0{TENANT_KEY}\0{TENANT_SECRET}".encode()
    assert authenticator.step(message).principal is not None
    assert_failed(authenticator.step(message), "other-error")


@given(st.binary(max_size=64))
def test_arbitrary_bytes_never_raise(message: bytes) -> None:
    step = create_authenticator("PLAIN", lambda _: None).step(message)
    assert step.done and step.principal is None and step.failure is not None
