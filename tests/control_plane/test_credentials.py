"""SCRAM credentials match RFC 7677's worked example, and keys/secrets look as documented."""

import base64
import hashlib
import hmac

from tenants import credentials

RFC7677_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC7677_AUTH_MESSAGE = (
    b"n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
)
RFC7677_CLIENT_PROOF = "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
RFC7677_SERVER_SIGNATURE = "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_scram_sha256_credential_verifies_rfc7677_exchange() -> None:
    stored = credentials.parse_scram_credential(
        credentials.scram_credential("pencil", "SCRAM-SHA-256", salt=RFC7677_SALT))
    assert stored["iterations"] == "4096"
    assert base64.b64decode(stored["salt"]) == RFC7677_SALT
    # A server holding only stored_key/server_key checks the client's proof like this:
    stored_key = base64.b64decode(stored["stored_key"])
    client_signature = hmac.new(stored_key, RFC7677_AUTH_MESSAGE, "sha256").digest()
    proof = base64.b64decode(RFC7677_CLIENT_PROOF)
    client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
    assert hashlib.sha256(client_key).digest() == stored_key
    server_key = base64.b64decode(stored["server_key"])
    server_signature = hmac.new(server_key, RFC7677_AUTH_MESSAGE, "sha256").digest()
    assert base64.b64encode(server_signature).decode() == RFC7677_SERVER_SIGNATURE


def test_sha512_credential_and_fresh_salts() -> None:
    first = credentials.parse_scram_credential(credentials.scram_credential("s", "SCRAM-SHA-512"))
    second = credentials.parse_scram_credential(credentials.scram_credential("s", "SCRAM-SHA-512"))
    assert len(base64.b64decode(first["stored_key"])) == 64
    assert first["salt"] != second["salt"] and first["stored_key"] != second["stored_key"]


def test_keys_and_secrets() -> None:
    key = credentials.new_key()
    assert len(key) == 16 and set(key) <= set(credentials.KEY_ALPHABET)
    assert len(credentials.new_secret()) >= 40
