"""A SCRAM client and credential builder for the tests, written independently of the server.

Only ``hashlib``/``hmac`` from the standard library, so a mistake shared with
``brokerd.security.scram_math`` cannot make both sides agree on a wrong answer.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


def _keys(mechanism: str, password: str, salt: bytes,
          iterations: int) -> tuple[bytes, bytes, bytes]:
    """(ClientKey, StoredKey, ServerKey) as RFC 5802 section 3 defines them."""
    name = HASHES[mechanism]
    salted = hashlib.pbkdf2_hmac(name, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", name).digest()
    stored_key = hashlib.new(name, client_key).digest()
    return client_key, stored_key, hmac.new(salted, b"Server Key", name).digest()


def credential_string(mechanism: str, password: str, salt: bytes, iterations: int = 4096) -> str:
    """Kafka's stored form ``salt=…,stored_key=…,server_key=…,iterations=…``."""
    _, stored, server = _keys(mechanism, password, salt, iterations)
    b64 = base64.b64encode
    return (f"salt={b64(salt).decode()},stored_key={b64(stored).decode()},"
            f"server_key={b64(server).decode()},iterations={iterations}")


def user_znode(password: str, *, principal: str | None = "acme.orders", tenant: str | None = "acme",
               iterations: int = 4096, extra: dict[str, str] | None = None) -> bytes:
    """A ``/config/users/<key>`` payload as the control plane writes it."""
    config = {mechanism: credential_string(mechanism, password, f"salt-{mechanism}".encode(),
                                           iterations)
              for mechanism in HASHES}
    if principal is not None:
        config["principal"] = principal
    if tenant is not None:
        config["tenant"] = tenant
    config.update(extra or {})
    return config_znode(config)


def config_znode(config: dict[str, str]) -> bytes:
    return json.dumps({"version": 1, "config": config}).encode()


class ScramClient:
    """The client side of one SCRAM exchange (RFC 5802), with the knobs negative tests need."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str = "clientNonce42",
                 gs2_header: str = "n,,") -> None:
        self.mechanism = mechanism
        self.username = username
        self.password = password
        self.nonce = nonce
        self.gs2_header = gs2_header
        self.bare = f"n={username.replace('=', '=3D').replace(',', '=2C')},r={nonce}"
        self.server_signature = b""

    def first(self) -> bytes:
        return (self.gs2_header + self.bare).encode()

    def final(self, server_first: bytes, *, nonce: str | None = None,
              channel_binding: str | None = None) -> bytes:
        fields = dict(part.split("=", 1) for part in server_first.decode().split(","))
        combined = fields["r"]
        assert combined.startswith(self.nonce), "server must extend the client nonce"
        salt, iterations = base64.b64decode(fields["s"]), int(fields["i"])
        client_key, stored, server = _keys(self.mechanism, self.password, salt, iterations)
        binding = channel_binding or base64.b64encode(self.gs2_header.encode()).decode()
        without_proof = f"c={binding},r={nonce or combined}"
        auth_message = f"{self.bare},{server_first.decode()},{without_proof}".encode()
        name = HASHES[self.mechanism]
        signature = hmac.new(stored, auth_message, name).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self.server_signature = hmac.new(server, auth_message, name).digest()
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def server_verified(self, server_final: bytes) -> bool:
        return server_final == b"v=" + base64.b64encode(self.server_signature)
