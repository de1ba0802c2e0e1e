"""``/config/users/<key>`` parsing: the control plane's format, defaults, and clear errors."""

from __future__ import annotations

import base64
import json

import pytest

from brokerd.security import (
    InvalidCredentials,
    Principal,
    ScramMechanism,
    parse_user_credentials,
)
from brokerd.security.credentials import parse_scram_credential
from tenants.credentials import scram_credential
from tenants.znodes import api_key_config, config_payload
from tests.unit.brokerd.security.scram_client import config_znode, credential_string, user_znode

GOOD_256 = credential_string("SCRAM-SHA-256", "pw", b"salt")


def test_control_plane_payload_parses() -> None:
    """Contract with tenants/znodes.py: what the control plane publishes, brokers read."""
    config = api_key_config(
        scram_sha_256=scram_credential("pw", "SCRAM-SHA-256", salt=b"s" * 32),
        scram_sha_512=scram_credential("pw", "SCRAM-SHA-512", salt=b"t" * 32),
        principal="acme.orders", tenant="acme")
    credentials = parse_user_credentials("ABCDEF", config_payload(config))
    assert credentials.username == "ABCDEF"
    assert credentials.principal == Principal("acme.orders", "acme")
    assert set(credentials.scram) == set(ScramMechanism)
    sha512 = credentials.scram[ScramMechanism.SCRAM_SHA_512]
    assert sha512.salt == b"t" * 32 and sha512.iterations == 4096
    assert len(sha512.stored_key) == len(sha512.server_key) == 64


def test_quota_keys_beside_credentials_are_ignored() -> None:
    znode = user_znode("pw", extra={"producer_byte_rate": "1024"})
    credentials = parse_user_credentials("K", znode)
    assert credentials.principal.tenant == "acme"


def test_principal_defaults_to_the_username_for_plain_kafka_users() -> None:
    credentials = parse_user_credentials("alice", config_znode({"SCRAM-SHA-256": GOOD_256}))
    assert credentials.principal == Principal("alice", None)


def test_quota_only_user_has_no_scram_credentials() -> None:
    credentials = parse_user_credentials("bob", config_znode({"consumer_byte_rate": "1"}))
    assert credentials.scram == {}


def test_scram_fields_decode() -> None:
    salt, stored, server = b"0123", b"a" * 32, b"b" * 32
    encoded = {name: base64.b64encode(raw).decode()
               for name, raw in (("salt", salt), ("stored", stored), ("server", server))}
    text = (f"server_key={encoded['server']},iterations=8192,salt={encoded['salt']},"
            f"stored_key={encoded['stored']}")
    credential = parse_scram_credential(ScramMechanism.SCRAM_SHA_256, text)
    assert credential.salt == salt and credential.iterations == 8192
    assert (credential.stored_key, credential.server_key) == (stored, server)


@pytest.mark.parametrize(("data", "complaint"), [
    (b"not json", "not JSON"),
    (b"\xff", "not JSON"),
    (b"[]", "version 1"),
    (json.dumps({"version": 2, "config": {}}), "version 1"),
    (json.dumps({"version": 1}), "'config'"),
    (json.dumps({"version": 1, "config": {"principal": 7}}), "'config'"),
    (config_znode({"SCRAM-SHA-256": "salt=abc"}), "expected fields"),
    (config_znode({"SCRAM-SHA-256": "garbage"}), "malformed field"),
    (config_znode({"SCRAM-SHA-256": GOOD_256 + ",salt=AAAA"}), "malformed field"),
    (config_znode({"SCRAM-SHA-256": GOOD_256.replace("salt=", "salt=!")}), "salt is not base64"),
    (config_znode({"SCRAM-SHA-256": credential_string("SCRAM-SHA-512", "pw", b"s")}),
     "stored_key is 64 bytes, expected 32"),
    (config_znode({"SCRAM-SHA-256": GOOD_256.replace("iterations=4096", "iterations=-1")}),
     "not a positive integer"),
    (config_znode({"SCRAM-SHA-256": GOOD_256.replace("iterations=4096", "iterations=0")}),
     "not a positive integer"),
    (config_znode({"principal": "acme.x", "tenant": "Acme"}), "not a slug"),
    (config_znode({"principal": "acme.x", "tenant": "ac.me"}), "not a slug"),
    (config_znode({"principal": "globex.orders", "tenant": "acme"}), "outside its tenant"),
    (config_znode({"principal": "acme.", "tenant": "acme"}), "outside its tenant"),
    (config_znode({"principal": "acmeorders", "tenant": "acme"}), "outside its tenant"),
    (config_znode({"principal": ""}), "empty principal"),
])
def test_malformed_znodes_raise_a_clear_error(data: bytes | str, complaint: str) -> None:
    with pytest.raises(InvalidCredentials, match=complaint) as raised:
        parse_user_credentials("KEY", data)
    assert "SCRAM" in str(raised.value) or "KEY" in str(raised.value)


def test_empty_salt_is_rejected() -> None:
    text = GOOD_256.split(",", 1)[1] + ",salt="
    with pytest.raises(InvalidCredentials, match="empty salt"):
        parse_scram_credential(ScramMechanism.SCRAM_SHA_256, text)
