"""One inter-broker connection: a follower's requests to its leader over asyncio streams.

Why so small: the codec (:mod:`brokerd.protocol`) does all encoding; this owns only the
socket, the size-prefix framing, correlation ids and a timeout per request
(``replica.socket.timeout.ms``).  One request at a time (a fetcher waits for each answer),
so no pipelining bookkeeping.  Every failure surfaces as :class:`ConnectionError` with
the reason, and the connection is then unusable (the fetcher reconnects).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from typing import Any

from brokerd.protocol import ProtocolError, decode_response, encode_request

_SIZE = struct.Struct(">i")


class InterBrokerConnection:
    """A connection to another broker, opened by :meth:`open`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 client_id: str, timeout_s: float) -> None:
        self._reader = reader
        self._writer = writer
        self._client_id = client_id
        self._timeout_s = timeout_s
        self._correlation_id = 0

    @classmethod
    async def open(cls, host: str, port: int, client_id: str,
                   timeout_s: float) -> InterBrokerConnection:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port),
                                                    timeout_s)
        except (OSError, TimeoutError) as exc:
            raise ConnectionError(f"cannot connect to {host}:{port}: {exc!r}") from exc
        return cls(reader, writer, client_id, timeout_s)

    async def request(self, api_key: int, version: int, body: dict[str, Any],
                      extra_wait_s: float = 0.0) -> dict[str, Any]:
        """Send one request and return the decoded response body; ``extra_wait_s`` adds
        the time the broker may park it (a fetch's max wait) to the timeout."""
        self._correlation_id += 1
        correlation_id = self._correlation_id
        try:
            self._writer.write(encode_request(api_key, version, correlation_id,
                                              self._client_id, body))
            await asyncio.wait_for(self._writer.drain(), self._timeout_s)
            frame = await asyncio.wait_for(self._read_frame(), self._timeout_s + extra_wait_s)
            answered, response = decode_response(api_key, version, frame)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ProtocolError) as exc:
            self.close()
            raise ConnectionError(f"request {api_key} v{version} failed: {exc!r}") from exc
        if answered != correlation_id:
            self.close()
            raise ConnectionError(f"correlation id {answered} != {correlation_id}")
        return response

    async def _read_frame(self) -> bytes:
        (size,) = _SIZE.unpack(await self._reader.readexactly(_SIZE.size))
        return await self._reader.readexactly(size)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._writer.close()
