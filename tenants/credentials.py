"""API key material: random keys and secrets, and salted SCRAM credentials (RFC 5802 / 7677).

The secret is shown to the user once; the service keeps only a password hash and, for the
brokers, Kafka's SCRAM credential form ``salt=…,stored_key=…,server_key=…,iterations=…``
(base64), from which a broker can verify both SCRAM and PLAIN logins without the secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import string

SCRAM_ITERATIONS = 4096  # Kafka's minimum for SCRAM-SHA-256/512
KEY_ALPHABET = string.ascii_uppercase + string.digits


def new_key() -> str:
    """A 16-character upper-case key (the SASL username): readable, never containing a dot."""
    return "".join(secrets.choice(KEY_ALPHABET) for _ in range(16))


def new_secret() -> str:
    """A 48-character URL-safe secret (288 bits of entropy)."""
    return secrets.token_urlsafe(36)


def scram_credential(password: str, mechanism: str, *, salt: bytes | None = None,
                     iterations: int = SCRAM_ITERATIONS) -> str:
    """Kafka's stored SCRAM credential string for one mechanism (``SCRAM-SHA-256``/``-512``).

    SaltedPassword = PBKDF2(H, password, salt, i); StoredKey = H(HMAC(SaltedPassword, "Client Key"));
    ServerKey = HMAC(SaltedPassword, "Server Key").
    """
    digest = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    salt = salt if salt is not None else secrets.token_bytes(32)
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.new(salted, b"Server Key", digest).digest()
    b64 = base64.b64encode
    return (f"salt={b64(salt).decode()},stored_key={b64(stored_key).decode()},"
            f"server_key={b64(server_key).decode()},iterations={iterations}")


def parse_scram_credential(text: str) -> dict[str, str]:
    """The fields of a stored credential string (values still base64 / decimal)."""
    return dict(part.split("=", 1) for part in text.split(","))
