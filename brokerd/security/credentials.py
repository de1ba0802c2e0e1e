"""Parsing ``/config/users/<api-key>`` into the credentials a SASL mechanism checks.

The znode is Kafka's dynamic-config JSON for a user, written by the control plane::

    {"version": 1, "config": {
        "SCRAM-SHA-256": "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=4096",
        "SCRAM-SHA-512": "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=4096",
        "principal": "acme.orders",      # the Kafka principal this key logs in as
        "tenant": "acme"}}               # absent for an operator user

The same znode also carries quota overrides (``producer_byte_rate`` …), so keys this module
does not know are ignored.  Without ``principal`` the principal is the username itself
(Kafka's own rule for SCRAM users).  Invariants checked, each with an explicit error:
the tenant is a slug ``[a-z0-9-]+``; a tenant's principal is ``<tenant>.<name>``; each
StoredKey and ServerKey is exactly one digest long; iterations are a positive integer (the
mechanisms enforce Kafka's 4096..16384 range at login, so one bad mechanism entry does not
make the key's other mechanism unusable — it is reported at login instead).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from brokerd.security.principal import Principal
from brokerd.security.scram_math import ScramMechanism

TENANT_SLUG = re.compile(r"[a-z0-9-]+")
_SCRAM_FIELDS = ("salt", "stored_key", "server_key", "iterations")


class InvalidCredentials(ValueError):
    """A ``/config/users`` znode that cannot be trusted as credentials (malformed JSON/fields)."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """One mechanism's stored SCRAM secret (never the password itself)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True, slots=True)
class UserCredentials:
    """Everything a login as ``username`` (the API key) needs: secrets and who it becomes."""

    username: str
    principal: Principal
    scram: Mapping[ScramMechanism, ScramCredential]


def parse_scram_credential(mechanism: ScramMechanism, text: str) -> ScramCredential:
    """Kafka's ``salt=…,stored_key=…,server_key=…,iterations=…`` string (base64 values)."""
    fields: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or key in fields:
            raise InvalidCredentials(f"{mechanism}: malformed field {part!r}")
        fields[key] = value
    if sorted(fields) != sorted(_SCRAM_FIELDS):
        raise InvalidCredentials(f"{mechanism}: expected fields {', '.join(_SCRAM_FIELDS)}, "
                                 f"got {', '.join(sorted(fields))}")
    salt = _base64(mechanism, "salt", fields["salt"])
    if not salt:
        raise InvalidCredentials(f"{mechanism}: empty salt")
    keys = {}
    for name in ("stored_key", "server_key"):
        keys[name] = _base64(mechanism, name, fields[name])
        if len(keys[name]) != mechanism.digest_size:
            raise InvalidCredentials(f"{mechanism}: {name} is {len(keys[name])} bytes, "
                                     f"expected {mechanism.digest_size}")
    iterations = fields["iterations"]
    if not iterations.isdecimal() or int(iterations) <= 0:
        raise InvalidCredentials(
            f"{mechanism}: iterations {iterations!r} is not a positive integer")
    return ScramCredential(salt, keys["stored_key"], keys["server_key"], int(iterations))


def parse_user_credentials(username: str, data: bytes | str) -> UserCredentials:
    """The credentials of API key ``username`` from its znode's bytes.

    Raises :class:`InvalidCredentials`; callers treat such a user as unknown (fail closed).
    """
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidCredentials(f"user {username!r}: not JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("version") != 1:
        raise InvalidCredentials(f"user {username!r}: expected an object with version 1")
    config = document.get("config")
    if not isinstance(config, dict) or not all(isinstance(v, str) for v in config.values()):
        raise InvalidCredentials(f"user {username!r}: 'config' must map names to strings")
    scram = {mechanism: parse_scram_credential(mechanism, config[mechanism.value])
             for mechanism in ScramMechanism if mechanism.value in config}
    return UserCredentials(username, _principal(username, config), scram)


def _principal(username: str, config: Mapping[str, str]) -> Principal:
    name = config.get("principal", username)
    tenant = config.get("tenant")
    if not name:
        raise InvalidCredentials(f"user {username!r}: empty principal")
    if tenant is None:
        return Principal(name, None)
    if not TENANT_SLUG.fullmatch(tenant):
        raise InvalidCredentials(f"user {username!r}: tenant {tenant!r} is not a slug [a-z0-9-]+")
    if not name.startswith(f"{tenant}.") or name == f"{tenant}.":
        raise InvalidCredentials(
            f"user {username!r}: principal {name!r} is outside its tenant {tenant!r}")
    return Principal(name, tenant)


def _base64(mechanism: ScramMechanism, field: str, value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidCredentials(f"{mechanism}: {field} is not base64") from None
