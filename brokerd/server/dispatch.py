"""From a request frame to response buffers: decode, route to the API's handler, encode.

Version policy (the reason this is one place): a request is served only at a version this
broker advertises in ApiVersions (``handlers.API_TABLE``), never merely because the codec
can parse it.  ApiVersions itself answers ANY version: one the broker does not know gets
UNSUPPORTED_VERSION (35) with a v0 body carrying the full table, so the client can pick a
version and retry (KIP-511).  Another API at a version the codec reads but the broker does
not serve (below Kafka 4.0's floor, KIP-896) gets UNSUPPORTED_VERSION in that version's own
response (``server.unsupported_version``); a version the codec cannot even read closes the
connection — there is no way to encode an answer the client can parse.

Security policy (also one place): until a SASL connection has authenticated, only
ApiVersions, SaslHandshake and SaslAuthenticate are served; anything else closes it.  After
SaslHandshake v0 the next frame is a bare SASL token, not a request.  Every request of a
principal that is not an operator super user runs through a tenancy :class:`Guard`
(names mapped into the tenant's namespace, ACLs checked; see ``server.tenancy``).

Quota policy: every authenticated request's handling time is charged to its (user,
client id) request quota here, except Produce and Fetch, whose handlers charge byte rates
and time themselves (``server.quotas``); a throttle goes into the response's
``throttle_time_ms`` and mutes the connection.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from brokerd.protocol import (
    ApiKey,
    ErrorCode,
    ProtocolError,
    RequestHeader,
    UnsupportedVersionError,
    decode_request,
    encode_response,
    response_with_defaults,
)
from brokerd.protocol.messages import ALL_MESSAGES
from brokerd.security.reauth import may_serve
from brokerd.server import unsupported_version
from brokerd.server.handlers import API_TABLE, ApiEntry, api_versions, sasl_authenticate
from brokerd.server.request import Later, Request
from brokerd.server.tenancy import Guard

if TYPE_CHECKING:
    from brokerd.server.broker import Broker
    from brokerd.server.connection import Connection


PRE_AUTHENTICATION_APIS = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE,
                                     ApiKey.SASL_AUTHENTICATE})
# APIs whose handlers charge their own quotas: byte rates, and request time without the
# long-poll wait.  Every other API's handling time is charged here, after the handler.
SELF_QUOTED_APIS = frozenset({ApiKey.PRODUCE, ApiKey.FETCH})
# APIs whose responses carry ``throttle_time_ms`` (all but the SASL ones): the dispatcher
# writes the request-quota throttle there, whatever the handler put in its dict.
THROTTLE_REPORTING_APIS = frozenset(
    message.api_key for message in ALL_MESSAGES
    if any(field.name == "throttle_time_ms" for field in message.response.fields))
# APIs that park until a rebalance completes: their wall time is waiting, not handler time
# (Kafka charges only the time a handler thread spends), so they are charged as 0 ms.
PARKING_APIS = frozenset({ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP})


class BrokerResources:
    """The cluster facts a tenancy :class:`Guard` needs, read from the broker's caches."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        metadata = self._broker.cache.topic_by_id(topic_id)
        return metadata.name if metadata is not None else None

    def partition_counts(self) -> dict[str, int]:
        return {name: len(metadata.replicas)
                for name, metadata in self._broker.cache.topics.items()}

    @property
    def default_partitions(self) -> int:
        return self._broker.config.num_partitions

    def max_partitions(self, tenant: str) -> int:
        return self._broker.security.max_partitions(tenant)

    def replication_factor(self, tenant: str) -> int:
        return (self._broker.security.replication_factor(tenant)
                or self._broker.config.default_replication_factor)


class Dispatcher:
    """The connection's :class:`~brokerd.server.connection.RequestProcessor`."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._resources = BrokerResources(broker)

    async def __call__(self, connection: Connection, frame: memoryview
                       ) -> list[Any] | Later[list[Any] | None] | None:
        if connection.sasl_raw_tokens:
            return await sasl_authenticate.raw_token(self._broker, connection, frame)
        try:
            header, body = decode_request(frame)
        except UnsupportedVersionError as exc:
            if exc.api_key == ApiKey.API_VERSIONS:
                return self._api_versions_unsupported(exc.correlation_id)
            raise
        entry = API_TABLE.get(header.api_key)
        if entry is None:
            raise ProtocolError(f"api {header.api_key} is not served")
        if connection.principal is None and header.api_key not in PRE_AUTHENTICATION_APIS:
            connection.close(f"{entry.name} before SASL authentication")
            return None
        if not may_serve(connection.sasl_session, time.monotonic(),
                         begins_reauthentication=header.api_key == ApiKey.SASL_HANDSHAKE,
                         continues_authentication=header.api_key == ApiKey.SASL_AUTHENTICATE
                         and connection.sasl is not None):
            connection.close(f"{entry.name} after the SASL session expired "
                             "(connections.max.reauth.ms) without re-authentication")
            return None
        if not entry.min_version <= header.api_version <= entry.max_version:
            return self._unsupported(entry, header, body)
        guard = self._guard(connection, entry)
        denial = guard.admit(body, header.api_version) if guard is not None else None
        started = time.perf_counter()
        if denial is not None:
            # A denial names the error and leaves the rest of the answer empty.
            return self._finish(connection, header, entry, guard, started, response_with_defaults(
                header.api_key, header.api_version, denial))
        response = await entry.handle(self._broker, Request(header, body, connection, len(frame)))
        if isinstance(response, Later):
            return Later(self._finish_later(connection, header, entry, guard, started,
                                            response))
        return self._finish(connection, header, entry, guard, started, response)

    async def _finish_later(self, connection: Connection, header: RequestHeader,
                            entry: ApiEntry, guard: Guard | None, started: float,
                            later: Later[dict[str, Any] | None]) -> list[Any] | None:
        return self._finish(connection, header, entry, guard, started, await later.response)

    def _finish(self, connection: Connection, header: RequestHeader, entry: ApiEntry,
                guard: Guard | None, started: float, response: dict[str, Any] | None
                ) -> list[Any] | None:
        """The answer's common tail: names restored for the tenant, the request quota's
        throttle, the request's metrics, the encoding."""
        if response is not None and guard is not None:
            guard.restore(response)
        elapsed_s = time.perf_counter() - started
        if header.api_key not in SELF_QUOTED_APIS:
            handler_ms = 0.0 if header.api_key in PARKING_APIS else elapsed_s * 1000
            throttle_ms = self._broker.quotas.request_throttle(
                connection, header.client_id, handler_time_ms=handler_ms)
            if response is not None and header.api_key in THROTTLE_REPORTING_APIS:
                response["throttle_time_ms"] = throttle_ms
        self._broker.probe.request_done(entry.name, header.api_version, elapsed_s)
        if response is None:
            return None
        return encode_response(header, response)

    def _guard(self, connection: Connection, entry: ApiEntry) -> Guard | None:
        """The request's tenancy guard; None for an operator super user (nothing to do)."""
        principal, namespace = connection.principal, connection.namespace
        if principal is None or namespace is None:
            return None  # pre-authentication APIs carry no names
        security = self._broker.security
        if namespace.is_operator and principal.kafka_principal in security.super_users:
            return None
        if entry.tenancy is None:
            raise ProtocolError(f"api {entry.name} is not served to tenant principals")
        return Guard(entry.tenancy, principal, namespace, connection.peer_ip, security.authorizer,
                     self._resources)

    def _unsupported(self, entry: ApiEntry, header: RequestHeader, body: dict[str, Any]
                     ) -> list[Any]:
        """A version the codec reads but the broker does not serve: UNSUPPORTED_VERSION in
        that version's own response (KIP-896's floor), or a closed connection when the
        version has nowhere to carry it."""
        if header.api_key == ApiKey.API_VERSIONS:
            return self._api_versions_unsupported(header.correlation_id)
        answer = unsupported_version.error_response(header.api_key, header.api_version, body)
        if answer is None:
            raise ProtocolError(f"api {header.api_key} v{header.api_version} is not served")
        # Counted under its own version, so operators can see who still sends old ones.
        self._broker.probe.request_done(entry.name, header.api_version, 0.0)
        return encode_response(header, response_with_defaults(
            header.api_key, header.api_version, answer))

    @staticmethod
    def _api_versions_unsupported(correlation_id: int) -> list[Any]:
        header = RequestHeader(int(ApiKey.API_VERSIONS), 0, correlation_id, None)
        body = api_versions.response_body(ErrorCode.UNSUPPORTED_VERSION)
        return encode_response(header, body)
