"""One client connection: framing, in-order processing, ordered responses, muting.

Why one object per client: everything that is per connection — the peer's identity and
(later) its authenticated principal and tenant, the quota mute, metering — hangs off this
object, so SASL/SSL, tenant mapping and quotas plug in here without touching handlers.

Wire framing (Kafka): every request is ``int32 size`` followed by ``size`` bytes (header +
body).  The size is checked against ``socket.request.max.bytes`` as soon as its 4 bytes
arrive, BEFORE any buffer for the body is allocated.  Receiving is in place: the kernel
writes into a receive buffer (``asyncio.BufferedProtocol``); a frame that fits in it is
sliced out as one copy, a larger frame gets a buffer of exactly its size, which the
kernel then fills directly (the only copy of a big produce request is the kernel's).
Either way the frame is a writable buffer the request owns: the log patches offsets into
its record batches in place and writes them from there (``Log.append_as_leader``), so a
small produce request crosses one user-space copy, a large one none.

Idle connections cost no receive buffer: the 64 KiB receive buffer is shared by every
connection of a listener.  Sharing is safe because the loop calls ``get_buffer``, reads
into it and calls ``buffer_updated`` synchronously, for one connection at a time (both
uvloop's stream and its TLS layer do); so between calls a connection keeps only the
unconsumed start of a frame (``_partial``, under ``SMALL_FRAME_BYTES`` + 4 bytes), copied
back to the front of the shared buffer by the next ``get_buffer``.

Ordering invariant: requests of one connection are processed one at a time, in arrival
order, and the responses (if any: acks=0 produce has none) are written in that order —
the order Kafka clients rely on to match correlation ids.  A request's processing may end
before its response is ready: an acks=all produce returns a :class:`Later` once its data
is appended, and the connection goes on with the next request while an answering task
awaits the later responses and writes them, and every response queued behind them, in
order (at most :data:`MAX_UNANSWERED` of them at a time).  Kafka's broker reads nothing
more from a connection until the response is sent, so each of a producer's pipelined
acks=all requests waited out the previous one's whole replication round; here they are
appended as they arrive and the followers carry them in one fetch.

Authentication state: a connection starts with ``principal`` None on a SASL listener (only
ApiVersions, SaslHandshake and SaslAuthenticate are served until it is set) or with the
listener's fixed principal (``ANONYMOUS`` on PLAINTEXT/SSL).  ``namespace`` is set together
with ``principal`` and never changes afterwards.

Not thread-safe: the loop thread only.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, cast

from brokerd.protocol import ProtocolError
from brokerd.security import Principal, SaslAuthenticator, TenantNamespace
from brokerd.security.reauth import SaslSession
from brokerd.server.request import Later
from brokerd.server.transfer import ResponseWriter

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
RECEIVE_BUFFER_BYTES = 64 * 1024
# Frames above this size get a dedicated buffer the kernel fills in place; below it the
# copy out of the receive buffer is cheaper than an allocation per recv.  A partial small
# frame (at most this + 4 bytes) must leave room to read into: 16 KiB of 64 does.
SMALL_FRAME_BYTES = 16 * 1024
# Stop reading from a client whose unanswered requests exceed either bound (resume below
# half): the count bounds pipelining, the bytes bound memory (100 MB produce requests).
MAX_QUEUED_FRAMES = 64
MAX_QUEUED_BYTES = 16 * 1024 * 1024
# Processed requests whose responses are not written yet (see the ordering invariant):
# each may hold its produce request's frame, so this bounds memory too.  Above the five
# requests in flight Kafka's producers default to.
MAX_UNANSWERED = 16


def new_receive_buffer() -> bytearray:
    """A receive buffer for the connections of one listener (one loop thread) to share."""
    return bytearray(RECEIVE_BUFFER_BYTES)


# Buffers of large frames kept for reuse by the connections of one thread (the loop's):
# up to MAX_SPARES of at most MAX_SPARE_BYTES each, SPARES_BUDGET_BYTES in all.  A
# producer's pipelined megabyte requests wait in a connection's queue (up to
# MAX_QUEUED_BYTES) and its parked acks=all answers, each in a buffer of its own: four
# spares ran out at every request of the throughput phases (a fresh zero-filled megabyte
# each, ``memset`` 4 % of the leader's CPU samples, 2026-12-06).  The worst case is what
# four spares of up to 4 MiB could keep before: 16 MiB per thread.
MAX_SPARES = 32
SPARES_BUDGET_BYTES = 16 * 1024 * 1024
MAX_SPARE_BYTES = 4 * 1024 * 1024
# sys.getrefcount of a spare only the pool's list refers to (the list and the argument).
_FREE_REFERENCES = 2


class _LargeFrameBuffers(threading.local):
    """Buffers for large frames, reused once nothing refers to them any more.

    Why: ``bytearray(size)`` zero-fills, a pass over every byte of a megabyte produce
    request before the socket writes it again.  Every memoryview of a bytearray (the
    frame, the records slices a handler takes, a write the transport has not finished)
    holds a reference to it, so
    a spare whose reference count is that of the pool's list alone is free.  Spares per
    loop thread, not per connection: a connection keeps no buffer while idle.
    """

    def __init__(self) -> None:
        self.spares: list[bytearray] = []

    def take(self, size: int) -> memoryview:
        """A writable buffer of exactly ``size`` bytes (its contents are garbage)."""
        if size > MAX_SPARE_BYTES:
            return memoryview(bytearray(size))
        spares = self.spares
        for index in range(len(spares)):
            if sys.getrefcount(spares[index]) == _FREE_REFERENCES:
                if len(spares[index]) >= size:
                    return memoryview(spares[index])[:size]
                if sum(map(len, spares)) - len(spares[index]) + size <= SPARES_BUDGET_BYTES:
                    spares[index] = bytearray(size)  # grown; the smaller one is freed
                    return memoryview(spares[index])
        if len(spares) < MAX_SPARES and sum(map(len, spares)) + size <= SPARES_BUDGET_BYTES:
            spares.append(bytearray(size))
            return memoryview(spares[-1])
        return memoryview(bytearray(size))


LARGE_FRAMES = _LargeFrameBuffers()


class FrameError(Exception):
    """The peer violated framing (negative size, or above socket.request.max.bytes)."""


class RequestProcessor(Protocol):
    """Turns one request frame into response buffers (None: send nothing back).

    Raises :class:`brokerd.protocol.ProtocolError` for a frame it cannot understand; the
    connection then closes (only this connection) with a log line naming the peer.
    ``frame`` is writable and the request's alone (the log patches record batches in it).
    """

    def __call__(self, connection: Connection, frame: memoryview
                 ) -> Awaitable[list[Any] | Later[list[Any] | None] | None]:
        ...


class Connection(asyncio.BufferedProtocol):
    """A Kafka client connection on one listener."""

    def __init__(
        self,
        processor: RequestProcessor,
        listener_name: str,
        max_request_bytes: int,
        writer_factory: Callable[[asyncio.Transport], ResponseWriter],
        on_close: Callable[[Connection], None] = lambda connection: None,
        on_open: Callable[[Connection], None] = lambda connection: None,
        receive_buffer: bytearray | None = None,
    ) -> None:
        """``receive_buffer``: the scratch buffer shared by the listener's connections
        (all served by one loop thread; see the module docstring); default: a private one."""
        self._processor = processor
        self.listener_name = listener_name
        self._max_request_bytes = max_request_bytes
        self._writer_factory = writer_factory
        self._on_close = on_close
        self._on_open = on_open
        self.peer = "unknown"
        self.peer_ip = "unknown"
        # Authentication (see the module docstring); ``api_key`` is the SASL username, kept so
        # the connection can be closed when that key is deleted.
        self.principal: Principal | None = None
        self.namespace: TenantNamespace | None = None
        self.api_key: str | None = None
        self.sasl: SaslAuthenticator | None = None
        self.sasl_raw_tokens = False  # SaslHandshake v0: tokens follow as bare frames
        # The last completed SASL exchange: its lifetime and re-authentication (KIP-368).
        self.sasl_session: SaslSession | None = None
        self.last_active = time.monotonic()
        self._close_after_response: str | None = None
        self.transport: asyncio.Transport | None = None
        self._writer: ResponseWriter | None = None
        self._buffer = receive_buffer if receive_buffer is not None else new_receive_buffer()
        self._partial = b""  # received start of the next frame (see the module docstring)
        self._large: memoryview | None = None  # dedicated buffer of the frame being received
        self._large_filled = 0
        # A list, not a deque: at most MAX_QUEUED_FRAMES long, and an empty deque costs
        # ~700 bytes on every idle connection.
        self._frames: list[memoryview] = []
        self._queued_bytes = 0
        self._worker: asyncio.Task[None] | None = None
        # Responses to write in request order, each a Later or ready (list or None), and
        # the task writing them; both only while some response is not ready yet.
        self._unanswered: list[Any] = []
        self._answerer: asyncio.Task[None] | None = None
        self._answered: asyncio.Future[None] | None = None  # woken after each one written
        self._awaiting: Later[Any] | None = None  # the later response being awaited
        self._pause_reasons: frozenset[str] = frozenset()  # the shared empty one while reading
        self._muted_until = 0.0  # loop time at which a quota mute ends
        self._unmute: asyncio.TimerHandle | None = None
        self.closed = False

    # ---- asyncio.BufferedProtocol ----------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        stream = cast(asyncio.Transport, transport)  # uvloop's class is no subclass of it
        self.transport = stream
        peer = stream.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.peer_ip = str(peer[0]) if isinstance(peer, tuple) else self.peer
        self._writer = self._writer_factory(stream)
        self._on_open(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._large is not None:
            return self._large[self._large_filled :]
        held = len(self._partial)
        if held:
            self._buffer[:held] = self._partial
        return memoryview(self._buffer)[held:]

    def buffer_updated(self, nbytes: int) -> None:
        self.last_active = time.monotonic()
        try:
            if self._large is not None:
                self._large_filled += nbytes
                if self._large_filled == len(self._large):
                    self._enqueue(self._large)
                    self._large = None
            else:
                self._split_frames(len(self._partial) + nbytes)
        except FrameError as exc:
            self.close(f"framing error: {exc}")
            return
        self._kick()

    def _split_frames(self, end: int) -> None:
        """Cut every complete frame out of the receive buffer's first ``end`` bytes and keep
        the rest in ``_partial`` (less than one small frame), unless a large frame took
        over: it then holds the rest in its own buffer."""
        start = 0
        while end - start >= 4:
            (size,) = _SIZE.unpack_from(self._buffer, start)
            if size < 0 or size > self._max_request_bytes:
                raise FrameError(f"request size {size} outside [0, {self._max_request_bytes}]")
            body_start = start + 4
            available = end - body_start
            if available >= size:
                view = memoryview(self._buffer)[body_start : body_start + size]
                # The one copy of a small frame, writable so the log needs no second one.
                self._enqueue(memoryview(bytearray(view)))
                start = body_start + size
            elif size > SMALL_FRAME_BYTES:
                self._large = LARGE_FRAMES.take(size)
                self._large[:available] = self._buffer[body_start:end]
                self._large_filled = available
                start = end
                break
            else:
                break
        self._partial = bytes(memoryview(self._buffer)[start:end])

    def _enqueue(self, frame: memoryview) -> None:
        self._frames.append(frame)
        self._queued_bytes += len(frame)

    def eof_received(self) -> bool | None:
        return None  # close the transport; pending responses die with it

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._writer is not None:
            self._writer.connection_lost()
        if self._worker is not None:
            self._worker.cancel()
        if self._answerer is not None:
            self._answerer.cancel()
        self._frames.clear()
        self._drop_unanswered()
        self._on_close(self)

    def pause_writing(self) -> None:
        if self._writer is not None:
            self._writer.pause_writing()

    def resume_writing(self) -> None:
        if self._writer is not None:
            self._writer.resume_writing()

    # ---- processing ------------------------------------------------------------------

    def _kick(self) -> None:
        if self._frames and (self._worker is None or self._worker.done()):
            self._worker = asyncio.get_running_loop().create_task(self._process())
        if len(self._frames) >= MAX_QUEUED_FRAMES or self._queued_bytes >= MAX_QUEUED_BYTES:
            self.pause("backlog")

    async def _process(self) -> None:
        try:
            await self._process_frames()
        finally:
            self._worker = None  # a finished task would stay referenced while idle

    async def _process_frames(self) -> None:
        loop = asyncio.get_running_loop()
        while self._frames and not self.closed:
            if (muted_s := self._muted_until - loop.time()) > 0:
                await asyncio.sleep(muted_s)
                continue
            if len(self._unanswered) >= MAX_UNANSWERED:
                self._answered = loop.create_future()
                await self._answered
                continue
            frame = self._frames.pop(0)
            self._queued_bytes -= len(frame)
            if (len(self._frames) < MAX_QUEUED_FRAMES // 2
                    and self._queued_bytes < MAX_QUEUED_BYTES // 2):
                self.resume("backlog")
            try:
                response = await self._processor(self, frame)
                if isinstance(response, Later) or self._unanswered:
                    self._answer_later(response)
                elif response is not None and self._writer is not None and not self.closed:
                    await self._writer.write(response)
                self.last_active = time.monotonic()
                if self._close_after_response is not None:
                    if self._answerer is not None:
                        await asyncio.wait({self._answerer})
                    self.close(self._close_after_response, flush=True)
                    return
            except Exception as exc:
                self._failed(exc)
                return

    def _answer_later(self, response: Any) -> None:
        """Queue ``response`` behind the unanswered ones (see the ordering invariant)."""
        if self.closed:
            if isinstance(response, Later):
                response.response.close()
            return
        self._unanswered.append(response)
        if self._answerer is None:
            self._answerer = asyncio.get_running_loop().create_task(self._answer_in_order())

    async def _answer_in_order(self) -> None:
        """Write the queued responses in order, each once it is ready; a response is
        taken off the queue only once written, so nothing else writes meanwhile."""
        try:
            while self._unanswered and not self.closed:
                head = self._unanswered[0]
                if isinstance(head, Later):
                    self._awaiting = head
                    response = await head.response
                    self._awaiting = None
                else:
                    response = head
                if response is not None and self._writer is not None and not self.closed:
                    await self._writer.write(response)
                del self._unanswered[0]
                self.last_active = time.monotonic()
                self._wake_processing()
        except Exception as exc:
            self._failed(exc)
        finally:
            self._answerer = None
            self._awaiting = None
            if self.closed:
                self._drop_unanswered()
            self._wake_processing()

    def _wake_processing(self) -> None:
        if self._answered is not None and not self._answered.done():
            self._answered.set_result(None)

    def _failed(self, exc: Exception) -> None:
        """A request could not be answered: lose this connection only."""
        if isinstance(exc, ProtocolError):
            self.close(f"malformed request: {exc}")
        else:  # a bug or an I/O error
            log.exception("request from %s failed", self.peer, exc_info=exc)
            self.close(f"internal error: {exc!r}")

    def _drop_unanswered(self) -> None:
        """The connection is gone: close the later responses no one will await (the one
        being awaited ends with the answering task's cancellation)."""
        for entry in self._unanswered:
            if isinstance(entry, Later) and entry is not self._awaiting:
                entry.response.close()
        self._unanswered.clear()

    async def drain(self) -> None:
        """Wait until every response written so far has left our buffers."""
        if self._worker is not None and not self._worker.done():
            await asyncio.wait({self._worker})
        if self._answerer is not None and not self._answerer.done():
            await asyncio.wait({self._answerer})
        if self._writer is not None:
            await self._writer.drained()

    # ---- seams: muting (quotas) and closing ------------------------------------------

    def pause(self, reason: str) -> None:
        """Stop reading from the client for ``reason`` (e.g. "quota", "backlog")."""
        if not self._pause_reasons and self.transport is not None and not self.closed:
            self.transport.pause_reading()
        self._pause_reasons |= {reason}

    def resume(self, reason: str) -> None:
        if reason not in self._pause_reasons:
            return
        self._pause_reasons -= {reason}
        if not self._pause_reasons and self.transport is not None and not self.closed:
            self.transport.resume_reading()

    def mute_for(self, seconds: float) -> None:
        """Quota throttling: read and process nothing from this client for ``seconds``
        (KIP-219).  Frames already received wait too (clients pipeline requests), and a
        second mute extends the first rather than being cut short by its timer."""
        loop = asyncio.get_running_loop()
        self._muted_until = max(self._muted_until, loop.time() + seconds)
        self.pause("quota")
        if self._unmute is not None:
            self._unmute.cancel()
        self._unmute = loop.call_at(self._muted_until, self.resume, "quota")

    def close_after_response(self, reason: str) -> None:
        """Close once the response of the request being processed has been written (e.g.
        SASL_AUTHENTICATION_FAILED: the client must read the error before the socket goes)."""
        self._close_after_response = reason

    def close(self, reason: str, *, flush: bool = False) -> None:
        """Close this connection only, logging why and naming the peer.  ``flush``: send
        what is already written first (``transport.close``) instead of dropping it."""
        if self.closed:
            return
        log.warning("closing connection from %s on %s: %s", self.peer, self.listener_name,
                    reason)
        self.closed = True
        if self.transport is not None:
            if flush:
                self.transport.close()
            else:
                self.transport.abort()
