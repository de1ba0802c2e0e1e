"""Server side of the SASL mechanisms Kafka clients use: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512.

Each mechanism is a small state machine, one per connection, fed the ``auth_bytes`` of each
SaslAuthenticate request (or of the raw v0 token frames) and returning a :class:`SaslStep`:
the bytes to send back, whether the exchange is over, and then either the authenticated
:class:`Principal` or a :class:`SaslFailure`.  Sans-I/O: no sockets, no clock; credentials
come from an injected ``lookup(username) -> UserCredentials | None`` (the coordination layer's
cache of ``/config/users``).  Malformed client bytes never raise: they become a failure.

How the server answers a failure: like Kafka, a SaslAuthenticate response with error
SASL_AUTHENTICATION_FAILED and ``failure.message`` as ``error_message`` (``response`` carries
SCRAM's ``e=<code>`` if the server wants to pass it on), then it closes the connection.
Every failure message for a wrong password, unknown user or bad proof is the same text, so
the client cannot tell which it was; ``failure.code`` (RFC 5802's server-error-value) and
``SaslStep.username`` are for the broker's own, rate-limited log.

PLAIN verifies the clear password against the stored SCRAM credential (re-deriving StoredKey,
see :mod:`brokerd.security.scram_math`): it costs one PBKDF2 of ``iterations`` rounds, a few
milliseconds, so the server may run PLAIN steps in an executor.  An unknown user costs the
same derivation, so response time does not reveal which keys exist.
"""

from __future__ import annotations

import hmac
import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

from brokerd.security import scram_math
from brokerd.security import scram_messages as msg
from brokerd.security.credentials import ScramCredential, UserCredentials
from brokerd.security.principal import Principal
from brokerd.security.scram_math import MAX_ITERATIONS, MIN_ITERATIONS, ScramMechanism

CredentialLookup = Callable[[str], UserCredentials | None]
NonceFactory = Callable[[], str]

PLAIN = "PLAIN"
SUPPORTED_MECHANISMS: tuple[str, ...] = (PLAIN, *(m.value for m in ScramMechanism))
INVALID_CREDENTIALS = "Authentication failed: invalid credentials"
AUTHZID_MISMATCH = "authorization id differs from the username"
# For PLAIN's unknown users: a derivation as expensive as a real one (see module docstring).
_DECOY_SALT = b"brokerd-plain-decoy-salt"


class UnsupportedMechanism(ValueError):
    """The client asked (SaslHandshake) for a mechanism not in :data:`SUPPORTED_MECHANISMS`."""


@dataclass(frozen=True, slots=True)
class SaslFailure:
    code: str  # RFC 5802 server-error-value (PLAIN uses the same vocabulary)
    message: str  # safe to send to the client as SaslAuthenticate's error_message


@dataclass(frozen=True, slots=True)
class SaslStep:
    """One answer of a mechanism.

    Invariants: ``done`` is False only for a challenge (``principal`` and ``failure`` None);
    when ``done``, exactly one of ``principal`` and ``failure`` is set.
    """

    response: bytes
    done: bool
    principal: Principal | None = None
    failure: SaslFailure | None = None
    username: str | None = None  # the SASL username once the client has sent one


class SaslAuthenticator(ABC):
    """The server end of one SASL exchange; not thread-safe, one per connection."""

    mechanism: str

    def __init__(self, lookup: CredentialLookup) -> None:
        self._lookup = lookup
        self._finished = False
        self.username: str | None = None

    def step(self, client_bytes: bytes | memoryview) -> SaslStep:
        """Consume the client's next message; after ``done`` every further step fails."""
        if self._finished:
            return self._failure(msg.OTHER_ERROR, _failed("exchange already finished"))
        result = self._advance(bytes(client_bytes))
        self._finished = result.done
        return result

    @abstractmethod
    def _advance(self, data: bytes) -> SaslStep:
        ...

    def _failure(self, code: str, message: str) -> SaslStep:
        return SaslStep(b"", True, failure=SaslFailure(code, message), username=self.username)


class PlainAuthenticator(SaslAuthenticator):
    """RFC 4616: one message ``authzid NUL authcid NUL passwd``, answered with empty bytes."""

    mechanism = PLAIN

    def _advance(self, data: bytes) -> SaslStep:
        parts = data.split(b"\0")
        if len(parts) != 3:
            return self._failure(msg.INVALID_ENCODING,
                                 _failed("PLAIN expects authzid NUL username NUL password"))
        authzid_bytes, username_bytes, password = parts
        try:
            authzid, username = authzid_bytes.decode(), username_bytes.decode()
        except UnicodeDecodeError:
            return self._failure(msg.INVALID_ENCODING, _failed("username is not UTF-8"))
        if not username or not password:
            return self._failure(msg.INVALID_ENCODING,
                                 _failed("username and password must not be empty"))
        self.username = username
        if authzid and authzid != username:
            return self._failure(msg.OTHER_ERROR, _failed(AUTHZID_MISMATCH))
        credentials = self._lookup(username)
        stored = _plain_credential(credentials)
        if credentials is None or stored is None:
            scram_math.salted_password(ScramMechanism.SCRAM_SHA_256, password, _DECOY_SALT,
                                       MIN_ITERATIONS)
            return self._failure(msg.UNKNOWN_USER, INVALID_CREDENTIALS)
        mechanism, credential = stored
        if not MIN_ITERATIONS <= credential.iterations <= MAX_ITERATIONS:
            return self._failure(msg.OTHER_ERROR, _iterations_message(credential.iterations))
        salted = scram_math.salted_password(mechanism, password, credential.salt,
                                            credential.iterations)
        candidate = scram_math.stored_key(mechanism, scram_math.client_key(mechanism, salted))
        if not hmac.compare_digest(candidate, credential.stored_key):
            return self._failure(msg.INVALID_PROOF, INVALID_CREDENTIALS)
        return SaslStep(b"", True, principal=credentials.principal, username=username)


class ScramAuthenticator(SaslAuthenticator):
    """RFC 5802 / 7677 server: client-first -> server-first, client-final -> server-final.

    Failures answer ``e=<code>`` (RFC 5802's server-final error form) at whichever step they
    happen; Kafka clients only look at the error code and message.
    """

    def __init__(self, mechanism: ScramMechanism, lookup: CredentialLookup,
                 nonce_factory: NonceFactory | None = None) -> None:
        super().__init__(lookup)
        self.mechanism = mechanism.value
        self._scram = mechanism
        self._new_nonce = nonce_factory or _random_nonce
        self._client_first: msg.ClientFirst | None = None
        self._nonce = ""  # client nonce + server nonce, which the client-final must echo
        self._server_first = ""
        self._credentials: UserCredentials | None = None
        self._credential: ScramCredential | None = None

    def _advance(self, data: bytes) -> SaslStep:
        try:
            if self._client_first is None:
                return self._first(msg.parse_client_first(data))
            return self._final(msg.parse_client_final(data))
        except msg.ScramMessageError as exc:
            return self._failure(exc.code, _failed(str(exc)))

    def _first(self, first: msg.ClientFirst) -> SaslStep:
        self.username = first.username
        if first.authzid is not None and first.authzid != first.username:
            return self._failure(msg.OTHER_ERROR, _failed(AUTHZID_MISMATCH))
        credentials = self._lookup(first.username)
        credential = credentials.scram.get(self._scram) if credentials is not None else None
        if credentials is None or credential is None:
            return self._failure(msg.UNKNOWN_USER, INVALID_CREDENTIALS)
        if not MIN_ITERATIONS <= credential.iterations <= MAX_ITERATIONS:
            return self._failure(msg.OTHER_ERROR, _iterations_message(credential.iterations))
        self._client_first, self._credentials, self._credential = first, credentials, credential
        self._nonce = first.nonce + self._new_nonce()
        self._server_first = msg.server_first(self._nonce, credential.salt, credential.iterations)
        return SaslStep(self._server_first.encode(), False, username=self.username)

    def _final(self, final: msg.ClientFinal) -> SaslStep:
        assert self._client_first is not None and self._credential is not None
        assert self._credentials is not None
        if final.channel_binding != self._client_first.gs2_header.encode():
            return self._failure(msg.CHANNEL_BINDINGS_DONT_MATCH,
                                       _failed("channel binding does not match"))
        # librdkafka before 2.6.1 (e.g. kcat 1.7 on Debian, librdkafka 2.0.2) sends the client
        # nonce once more in front of the combined nonce; Kafka accepts that form too. It still
        # carries the whole server nonce, so a replayed final fails all the same.
        if final.nonce not in (self._nonce, self._client_first.nonce + self._nonce):
            return self._failure(msg.OTHER_ERROR, _failed("nonce mismatch"))
        mech, credential = self._scram, self._credential
        if len(final.proof) != mech.digest_size:
            return self._failure(msg.INVALID_PROOF, INVALID_CREDENTIALS)
        # AuthMessage = client-first-bare "," server-first "," client-final-without-proof
        auth_message = ",".join(
            (self._client_first.bare, self._server_first, final.without_proof)).encode()
        signature = scram_math.keyed_hash(mech, credential.stored_key, auth_message)
        client_key = scram_math.xor(final.proof, signature)
        if not hmac.compare_digest(scram_math.stored_key(mech, client_key), credential.stored_key):
            return self._failure(msg.INVALID_PROOF, INVALID_CREDENTIALS)
        server_signature = scram_math.keyed_hash(mech, credential.server_key, auth_message)
        return SaslStep(msg.server_final(server_signature).encode(), True,
                        principal=self._credentials.principal, username=self.username)

    def _failure(self, code: str, message: str) -> SaslStep:
        """As the base class, but answering RFC 5802's ``e=<code>``."""
        return SaslStep(msg.server_error(code).encode(), True, failure=SaslFailure(code, message),
                        username=self.username)


def create_authenticator(mechanism: str, lookup: CredentialLookup, *,
                         nonce_factory: NonceFactory | None = None) -> SaslAuthenticator:
    """A fresh server exchange for ``mechanism`` (a SaslHandshake mechanism name).

    Raises :class:`UnsupportedMechanism`; the handshake then answers UNSUPPORTED_SASL_MECHANISM
    listing :data:`SUPPORTED_MECHANISMS`.  ``nonce_factory`` exists for tests only.
    """
    if mechanism == PLAIN:
        return PlainAuthenticator(lookup)
    if mechanism in SUPPORTED_MECHANISMS:
        return ScramAuthenticator(ScramMechanism(mechanism), lookup, nonce_factory)
    raise UnsupportedMechanism(f"unsupported SASL mechanism {mechanism!r}")


def _plain_credential(
        credentials: UserCredentials | None) -> tuple[ScramMechanism, ScramCredential] | None:
    """The stored credential PLAIN checks: SHA-256's if present (cheaper), else SHA-512's."""
    if credentials is None:
        return None
    for mechanism in ScramMechanism:
        if mechanism in credentials.scram:
            return mechanism, credentials.scram[mechanism]
    return None


def _iterations_message(iterations: int) -> str:
    return _failed(f"stored credential has {iterations} iterations, "
                   f"outside {MIN_ITERATIONS}..{MAX_ITERATIONS}")


def _failed(reason: str) -> str:
    return f"Authentication failed: {reason}"


def _random_nonce() -> str:
    """24 random bytes as URL-safe base64: visible ASCII without ',' as RFC 5802 requires."""
    return secrets.token_urlsafe(24)
