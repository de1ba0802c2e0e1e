"""The four SCRAM messages (RFC 5802 section 7) as a Kafka broker speaks them.

Exchange, each message one SaslAuthenticate round trip::

    client-first  n,[a=<authzid>],n=<user>,r=<client nonce>
    server-first  r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>
    client-final  c=<base64 of the gs2 header "n,,">,r=<both nonces>,p=<base64 ClientProof>
    server-final  v=<base64 ServerSignature>        or, on failure, e=<server-error-value>

The AuthMessage both proofs sign is ``client-first-bare "," server-first "," client-final
without ",p=…"``, which is why the parsed messages keep those exact substrings.

What we accept, and why: the gs2 flag ``n`` (client does not do channel binding) or ``y``
(client could, but thinks we cannot — true, we advertise no ``-PLUS`` mechanism); ``p=`` asks
for channel binding we do not offer.  No extensions at all: not the mandatory ``m=``, and not
Kafka's ``tokenauth=true`` (delegation tokens are not supported here).  Usernames use RFC
5802's escaping (``=2C`` for ``,`` and ``=3D`` for ``=``).  Parsing raises only
:class:`ScramMessageError`, whose ``code`` is the RFC's server-error-value.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

# RFC 5802 server-error-value strings used here.
INVALID_ENCODING = "invalid-encoding"
EXTENSIONS_NOT_SUPPORTED = "extensions-not-supported"
INVALID_PROOF = "invalid-proof"
CHANNEL_BINDINGS_DONT_MATCH = "channel-bindings-dont-match"
CHANNEL_BINDING_NOT_SUPPORTED = "channel-binding-not-supported"
UNKNOWN_USER = "unknown-user"
INVALID_USERNAME_ENCODING = "invalid-username-encoding"
OTHER_ERROR = "other-error"


class ScramMessageError(ValueError):
    """A SCRAM message the server rejects; ``code`` is what goes after ``e=``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class ClientFirst:
    gs2_header: str  # e.g. "n,,": the client-final's c= must be exactly its base64
    authzid: str | None
    username: str
    nonce: str
    bare: str  # client-first-message-bare, the start of the AuthMessage


@dataclass(frozen=True, slots=True)
class ClientFinal:
    channel_binding: bytes
    nonce: str
    proof: bytes
    without_proof: str  # the end of the AuthMessage


def parse_client_first(data: bytes) -> ClientFirst:
    text = _decode(data)
    parts = text.split(",", 2)
    if len(parts) != 3:
        raise ScramMessageError(INVALID_ENCODING, "client-first message lacks a gs2 header")
    flag, authz, bare = parts
    if flag.startswith("p="):
        raise ScramMessageError(CHANNEL_BINDING_NOT_SUPPORTED, "channel binding is not supported")
    if flag not in ("n", "y"):
        raise ScramMessageError(INVALID_ENCODING, f"bad gs2 channel-binding flag {flag!r}")
    if authz and not authz.startswith("a="):
        raise ScramMessageError(INVALID_ENCODING, "bad gs2 authorization id")
    authzid = _saslname(authz[2:]) if authz else None
    attributes = bare.split(",")
    if attributes[0].startswith("m="):
        raise ScramMessageError(EXTENSIONS_NOT_SUPPORTED, "mandatory extensions are not supported")
    if len(attributes) < 2:
        raise ScramMessageError(INVALID_ENCODING, "client-first message needs n= and r=")
    username = _saslname(_attribute(attributes[0], "n"))
    nonce = _nonce(_attribute(attributes[1], "r"))
    if len(attributes) > 2:
        raise ScramMessageError(EXTENSIONS_NOT_SUPPORTED, "SCRAM extensions are not supported")
    return ClientFirst(f"{flag},{authz},", authzid, username, nonce, bare)


def parse_client_final(data: bytes) -> ClientFinal:
    text = _decode(data)
    attributes = text.split(",")
    if len(attributes) < 3:
        raise ScramMessageError(INVALID_ENCODING, "client-final message needs c=, r= and p=")
    channel_binding = _base64(_attribute(attributes[0], "c"), "channel binding")
    nonce = _nonce(_attribute(attributes[1], "r"))
    proof = _base64(_attribute(attributes[-1], "p"), "proof")
    if len(attributes) > 3:
        raise ScramMessageError(EXTENSIONS_NOT_SUPPORTED, "SCRAM extensions are not supported")
    return ClientFinal(channel_binding, nonce, proof, ",".join(attributes[:-1]))


def server_first(nonce: str, salt: bytes, iterations: int) -> str:
    return f"r={nonce},s={base64.b64encode(salt).decode()},i={iterations}"


def server_final(server_signature: bytes) -> str:
    return f"v={base64.b64encode(server_signature).decode()}"


def server_error(code: str) -> str:
    return f"e={code}"


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScramMessageError(INVALID_ENCODING, "SCRAM message is not UTF-8") from None


def _attribute(text: str, name: str) -> str:
    if not text.startswith(f"{name}="):
        raise ScramMessageError(INVALID_ENCODING, f"expected attribute {name}=, got {text[:16]!r}")
    return text[len(name) + 1:]


def _saslname(value: str) -> str:
    """Undo RFC 5802's escaping; any other '=' is an encoding error."""
    pieces = value.split("=")
    name = pieces[0]
    for piece in pieces[1:]:
        escape, rest = piece[:2], piece[2:]
        if escape not in ("2C", "3D"):
            raise ScramMessageError(INVALID_USERNAME_ENCODING, "bad '=' escape in a SCRAM name")
        name += ("," if escape == "2C" else "=") + rest
    if not name:
        raise ScramMessageError(INVALID_USERNAME_ENCODING, "empty SCRAM name")
    return name


def _nonce(value: str) -> str:
    # RFC 5802: printable = %x21-2B / %x2D-7E (visible ASCII except ','; commas were split off).
    if not value or not all("\x21" <= char <= "\x7e" for char in value):
        raise ScramMessageError(INVALID_ENCODING, "a nonce must be non-empty visible ASCII")
    return value


def _base64(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ScramMessageError(INVALID_ENCODING, f"{what} is not base64") from None
