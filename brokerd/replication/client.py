"""One inter-broker connection: a follower's requests to its leader over one socket.

Why so small: the codec (:mod:`brokerd.protocol`) does all encoding; this owns only the
socket, the size-prefix framing, correlation ids and a timeout per request
(``replica.socket.timeout.ms``).  One request at a time (a fetcher waits for each answer),
so no pipelining bookkeeping.

Responses are received by :class:`_FrameProtocol`, an ``asyncio.BufferedProtocol``: the
event loop reads into a buffer the protocol hands out, and a frame larger than its small
receive buffer (a follower's fetch of a megabyte of records) gets a buffer of exactly its
size that the socket fills directly, which is then the frame itself.  Through
``asyncio.StreamReader`` each such byte was copied three times in user space (the loop's
``bytes`` chunk, the reader's ``bytearray``, ``readexactly``'s result), the largest CPU
cost a follower had per replicated megabyte after the kernel's own.  A caller may hand
:meth:`InterBrokerConnection.request` a hand-written codec for its message (the fetcher's
Fetch v12, :mod:`brokerd.protocol.fetch_v12`; the controller's LeaderAndIsr)
instead of the generic one.

Every failure surfaces as :class:`ConnectionError` with the reason, and the connection is
then unusable (the fetcher reconnects).

Over an SSL or SASL_SSL inter-broker listener the socket is TLS, and over SASL_* the
connection logs in before its first request (:mod:`brokerd.replication.inter_broker_auth`);
a broker that grants a limited session (KIP-368, ``connections.max.reauth.ms``) is logged
into again on the same connection once 90% of the session has passed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ssl
import struct
import sys
import time
from dataclasses import dataclass
from typing import Any, cast

from brokerd.protocol import ProtocolError, decode_response, encode_request
from brokerd.replication.inter_broker_auth import (
    InterBrokerAuth,
    authenticate,
    client_tls_context,
)

_SIZE = struct.Struct(">i")


@dataclass(frozen=True)
class InterBrokerLink:
    """How connections to other brokers are made: plain TCP (the default), TLS, SASL."""

    auth: InterBrokerAuth | None = None
    tls: ssl.SSLContext | None = None

    @classmethod
    def for_auth(cls, auth: InterBrokerAuth) -> InterBrokerLink:
        """The link for the inter-broker listener (its TLS context is built once here)."""
        return cls(auth, client_tls_context(auth) if auth.tls else None)


PLAINTEXT_LINK = InterBrokerLink()


class InterBrokerConnection:
    """A connection to another broker, opened by :meth:`open`."""

    def __init__(self, protocol: _FrameProtocol, client_id: str, timeout_s: float) -> None:
        self._protocol = protocol
        self._client_id = client_id
        self._timeout_s = timeout_s
        self._correlation_id = 0
        self._auth: InterBrokerAuth | None = None
        self._reauthenticate_at = float("inf")

    @classmethod
    async def open(cls, host: str, port: int, client_id: str, timeout_s: float,
                   link: InterBrokerLink = PLAINTEXT_LINK) -> InterBrokerConnection:
        """Connect (over TLS when the link has a context) and log in when it is SASL."""
        auth, tls = link.auth, link.tls
        try:
            _, protocol = await asyncio.wait_for(asyncio.get_running_loop().create_connection(
                _FrameProtocol, host, port, ssl=tls,
                server_hostname=host if tls is not None else None), timeout_s)
        except (OSError, TimeoutError) as exc:  # ssl.SSLError is an OSError
            raise ConnectionError(f"cannot connect to {host}:{port}: {exc!r}") from exc
        connection = cls(protocol, client_id, timeout_s)
        if auth is not None and auth.sasl:
            connection._auth = auth
            try:
                await connection._login()
            except ConnectionError:
                connection.close()
                raise
        return connection

    async def _login(self) -> None:
        assert self._auth is not None
        lifetime_ms = await authenticate(self._exchange, self._auth)
        self._reauthenticate_at = (time.monotonic() + lifetime_ms * 0.9 / 1000
                                   if lifetime_ms > 0 else float("inf"))

    async def request(self, api_key: int, version: int, body: Any,
                      extra_wait_s: float = 0.0, codec: Any = None) -> dict[str, Any]:
        """Send one request and return the decoded response body; ``extra_wait_s`` adds
        the time the broker may park it (a fetch's max wait) to the timeout.  ``codec``
        (see :meth:`_exchange`) writes ``body``, whatever its type, and reads the answer
        instead of the generic codec."""
        if time.monotonic() >= self._reauthenticate_at:
            await self._login()
        return await self._exchange(api_key, version, body, extra_wait_s, codec)

    async def _exchange(self, api_key: int, version: int, body: Any,
                        extra_wait_s: float = 0.0, codec: Any = None) -> dict[str, Any]:
        """One round trip; ``codec``: a module with ``encode_request(correlation_id,
        client_id, body)`` and ``decode_response(frame)`` for this api and version
        (:mod:`~brokerd.protocol.fetch_v12`), else the generic codec."""
        self._correlation_id += 1
        correlation_id = self._correlation_id
        protocol = self._protocol
        try:
            protocol.write(
                encode_request(api_key, version, correlation_id, self._client_id, body)
                if codec is None else codec.encode_request(correlation_id, self._client_id,
                                                           body))
            # asyncio.timeout, not wait_for: wait_for wraps each await in a Task of its
            # own, two more tasks per replica fetch on the acks=all path.
            if protocol.write_paused:
                async with asyncio.timeout(self._timeout_s):
                    await protocol.drained()
            frame = protocol.next_frame()
            if frame is None:
                async with asyncio.timeout(self._timeout_s + extra_wait_s):
                    frame = await protocol.wait_frame()
            answered, response = (decode_response(api_key, version, frame) if codec is None
                                  else codec.decode_response(frame))
        except (OSError, TimeoutError, ProtocolError) as exc:
            self.close()
            raise ConnectionError(f"request {api_key} v{version} failed: {exc!r}") from exc
        if answered != correlation_id:
            self.close()
            raise ConnectionError(f"correlation id {answered} != {correlation_id}")
        return response

    def close(self) -> None:
        self._protocol.close()


# Received bytes land here first; a frame that does not fit gets a buffer of its own.
RECEIVE_BUFFER_BYTES = 64 * 1024
# A response this large cannot be sane (a fetch answers at most replica.fetch.response
# .max.bytes plus one batch beyond it, KIP-74); treat it as a broken stream.
MAX_FRAME_BYTES = 1 << 30
# A frame buffer up to this size is kept for the next large frame.
MAX_SPARE_BYTES = 16 << 20
# sys.getrefcount of a buffer only _FrameProtocol._spare refers to.
_FREE_REFERENCES = 2


class _FrameProtocol(asyncio.BufferedProtocol):
    """Size-prefixed response frames from one connection, received with as few copies
    as possible (see the module doc).  Frames queue in arrival order; a lost connection
    or a broken stream fails the waiting and every later read with ConnectionError."""

    def __init__(self) -> None:
        self._buffer = bytearray(RECEIVE_BUFFER_BYTES)
        self._filled = 0  # bytes of _buffer holding an incomplete frame's start
        self._large: memoryview | None = None  # the frame being received in place
        self._large_filled = 0
        # The last large frame's buffer, reused for the next one once nothing refers to
        # it any more (see _large_buffer).
        self._spare: bytearray | None = None
        self._frames: collections.deque[memoryview] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None
        self._drain_waiter: asyncio.Future[None] | None = None
        self._error: Exception | None = None
        self._transport: asyncio.Transport | None = None
        self.write_paused = False

    # ---- asyncio callbacks ---------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._large is not None:
            return self._large[self._large_filled:]
        return memoryview(self._buffer)[self._filled:]

    def buffer_updated(self, nbytes: int) -> None:
        if self._large is not None:
            self._large_filled += nbytes
            if self._large_filled == len(self._large):
                self._frames.append(self._large)
                self._large = None
                self._wake()
            return
        self._filled += nbytes
        try:
            self._split_frames()
        except ConnectionError as exc:
            self._fail(exc)
            if self._transport is not None:
                self._transport.abort()

    def eof_received(self) -> bool:
        self._fail(ConnectionError("connection closed by the broker"))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionError(f"connection lost: {exc!r}" if exc is not None
                                   else "connection closed"))
        self._drained()

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        self._drained()

    # ---- framing -------------------------------------------------------------------

    def _split_frames(self) -> None:
        """Take every complete frame out of the receive buffer; move an incomplete one's
        start to the front, or into a buffer of its own when it is larger."""
        buffer, end, start = self._buffer, self._filled, 0
        while end - start >= _SIZE.size:
            (size,) = _SIZE.unpack_from(buffer, start)
            if not 0 <= size <= MAX_FRAME_BYTES:
                raise ConnectionError(f"response size {size} outside [0, {MAX_FRAME_BYTES}]")
            body_start = start + _SIZE.size
            available = end - body_start
            if available >= size:
                self._frames.append(memoryview(bytes(memoryview(buffer)[body_start:body_start + size])))
                start = body_start + size
            elif size > len(buffer) - _SIZE.size:
                self._large = self._large_buffer(size)
                self._large[:available] = buffer[body_start:end]
                self._large_filled = available
                start = end
                break
            else:
                break
        if start:
            buffer[:end - start] = buffer[start:end]
            self._filled = end - start
        if self._frames:
            self._wake()

    def _large_buffer(self, size: int) -> memoryview:
        """A buffer of ``size`` bytes for one large frame: the previous frame's when it is
        big enough and nothing refers to it any more (every memoryview of a bytearray,
        the records slices of a decoded answer included, holds a reference to it, so a
        reference count of two, the attribute and the call's argument, means it is
        free), else a new one.  A new bytearray is zero-filled, a pass over every byte
        that was 8% of a follower's CPU per replicated megabyte."""
        if (self._spare is None or len(self._spare) < size
                or sys.getrefcount(self._spare) != _FREE_REFERENCES):
            self._spare = bytearray(size) if size <= MAX_SPARE_BYTES else None
            if self._spare is None:
                return memoryview(bytearray(size))
        return memoryview(self._spare)[:size]

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _fail(self, exc: Exception) -> None:
        if self._error is None:
            self._error = exc
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)

    def _drained(self) -> None:
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_result(None)

    # ---- the connection's side -----------------------------------------------------

    def write(self, data: bytes | bytearray) -> None:
        if self._error is not None:
            raise self._error
        assert self._transport is not None
        self._transport.write(data)

    async def drained(self) -> None:
        """Return once the transport took what was written (it paused writing before)."""
        while self.write_paused and self._error is None:
            self._drain_waiter = asyncio.get_running_loop().create_future()
            await self._drain_waiter
        if self._error is not None:
            raise self._error

    def next_frame(self) -> memoryview | None:
        """The oldest received frame not yet taken, or None."""
        if self._frames:
            return self._frames.popleft()
        if self._error is not None:
            raise self._error
        return None

    async def wait_frame(self) -> memoryview:
        """The next frame, once it has arrived whole."""
        while not self._frames:
            if self._error is not None:
                raise self._error
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._frames.popleft()

    def close(self) -> None:
        if self._transport is not None:
            with contextlib.suppress(Exception):
                self._transport.close()
