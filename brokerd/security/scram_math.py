"""The SCRAM key derivations of RFC 5802 section 3, for SHA-256 (RFC 7677) and SHA-512.

Pure functions over bytes.  With ``H`` the hash, ``HMAC`` keyed by its first argument::

    SaltedPassword  = PBKDF2-HMAC-H(password, salt, iterations)   (RFC 5802's Hi())
    ClientKey       = HMAC(SaltedPassword, "Client Key")
    StoredKey       = H(ClientKey)
    ServerKey       = HMAC(SaltedPassword, "Server Key")
    ClientSignature = HMAC(StoredKey, AuthMessage)
    ClientProof     = ClientKey XOR ClientSignature
    ServerSignature = HMAC(ServerKey, AuthMessage)

The broker stores only (salt, StoredKey, ServerKey, iterations): StoredKey lets it check a
proof (``H(proof XOR ClientSignature) == StoredKey``) and, for PLAIN, a clear password
(re-derive StoredKey from it); ServerKey lets it prove itself to the client.  Neither reveals
the password.  Passwords are used as their UTF-8 bytes without SASLprep, as Kafka does.
"""

from __future__ import annotations

import hashlib
import hmac
from enum import StrEnum

# Kafka's bounds for both SCRAM mechanisms: 4096 is RFC 7677's minimum; the maximum keeps a
# stored credential from turning every PLAIN login into seconds of CPU.
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


class ScramMechanism(StrEnum):
    """A SCRAM mechanism by its SASL name; the value is also the ZooKeeper config key."""

    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"

    @property
    def hash_name(self) -> str:
        return "sha256" if self is ScramMechanism.SCRAM_SHA_256 else "sha512"

    @property
    def digest_size(self) -> int:
        return 32 if self is ScramMechanism.SCRAM_SHA_256 else 64


def salted_password(mechanism: ScramMechanism, password: bytes, salt: bytes,
                    iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password, salt, iterations)


def keyed_hash(mechanism: ScramMechanism, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, mechanism.hash_name).digest()


def client_key(mechanism: ScramMechanism, salted: bytes) -> bytes:
    return keyed_hash(mechanism, salted, b"Client Key")


def server_key(mechanism: ScramMechanism, salted: bytes) -> bytes:
    return keyed_hash(mechanism, salted, b"Server Key")


def stored_key(mechanism: ScramMechanism, key: bytes) -> bytes:
    """StoredKey = H(ClientKey)."""
    return hashlib.new(mechanism.hash_name, key).digest()


def xor(left: bytes, right: bytes) -> bytes:
    if len(left) != len(right):
        raise ValueError("xor needs equal lengths")
    return bytes(a ^ b for a, b in zip(left, right, strict=True))
