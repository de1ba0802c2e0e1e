"""From a request frame to response buffers: decode, route to the API's handler, encode.

Version policy (the reason this is one place): a request is served only at a version this
broker advertises in ApiVersions (``handlers.API_TABLE``), never merely because the codec
can parse it.  ApiVersions itself answers ANY version: one the broker does not know gets
UNSUPPORTED_VERSION (35) with a v0 body carrying the full table, so the client can pick a
version and retry (KIP-511).  Any other API at an unsupported version closes the
connection, as Kafka does — there is no way to encode an answer the client can parse.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from brokerd.protocol import (
    ApiKey,
    ErrorCode,
    ProtocolError,
    RequestHeader,
    UnsupportedVersionError,
    decode_request,
    encode_response,
)
from brokerd.server.handlers import API_TABLE, api_versions
from brokerd.server.request import Request

if TYPE_CHECKING:
    from brokerd.server.broker import Broker
    from brokerd.server.connection import Connection


class Dispatcher:
    """The connection's :class:`~brokerd.server.connection.RequestProcessor`."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def __call__(self, connection: Connection, frame: memoryview) -> list[Any] | None:
        try:
            header, body = decode_request(frame)
        except UnsupportedVersionError as exc:
            if exc.api_key == ApiKey.API_VERSIONS:
                return self._api_versions_unsupported(exc.correlation_id)
            raise
        entry = API_TABLE.get(header.api_key)
        if entry is None or not entry.min_version <= header.api_version <= entry.max_version:
            if header.api_key == ApiKey.API_VERSIONS:
                return self._api_versions_unsupported(header.correlation_id)
            raise ProtocolError(f"api {header.api_key} v{header.api_version} is not served")
        started = time.perf_counter()
        response = await entry.handle(self._broker, Request(header, body, connection))
        self._broker.probe.request_done(entry.name, header.api_version,
                                        time.perf_counter() - started)
        if response is None:
            return None
        return encode_response(header, response)

    @staticmethod
    def _api_versions_unsupported(correlation_id: int) -> list[Any]:
        header = RequestHeader(int(ApiKey.API_VERSIONS), 0, correlation_id, None)
        body = api_versions.response_body(ErrorCode.UNSUPPORTED_VERSION)
        return encode_response(header, body)
