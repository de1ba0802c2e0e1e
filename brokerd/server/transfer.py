"""Moving response buffers to a client socket, log bytes with zero copy where possible.

A response is the codec's list of buffers: bytes-like pieces (headers, small fields) and,
inside Fetch responses, *regions* of log segment files (anything with ``nbytes`` plus
``file``/``position``).  Two transfer modes, chosen by ``socket.fetch.transfer``:

* ``sendfile`` — ``os.sendfile`` from the segment file straight into the socket (no copy
  through user space).  Only possible while the transport's own buffer is empty (bytes
  must leave in order), so the writer waits for the transport to drain first.  When the
  socket's send buffer is full (``EAGAIN``) one chunk is read and handed to the transport
  instead, which then tells us (``resume_writing``) when it has drained again.
* ``pread`` — read each region in chunks and hand the bytes to the transport.

Either way a response of at most ``COALESCE_BYTES`` is read whole into memory and written
at once: for small answers one copy is far cheaper than several syscalls.

A larger response on a TCP socket in ``sendfile`` mode is written *corked* (``TCP_CORK``
set before its first piece, cleared after its last): the header bytes the transport sends
at once then wait in the kernel and leave in the same segments as the file data behind
them.  Uncorked, each response cost a segment of its own for the header, with the TCP
processing of the receiving side and a wake-up of the reader (on loopback both are paid by
the sender's ``send``): py-spy put 13 % of a leader's samples in that one header write
during the acks=all throughput phase (``bench.replication_cpu``), where every follower
fetch returns about a megabyte.

The cork is set through a socket object made once per connection, on a duplicate of its
descriptor (uvloop's transport socket makes a new Python socket object for every
``setsockopt``).

The transport's write-buffer limits are set to 0 so that ``pause_writing`` /
``resume_writing`` report exactly "buffer non-empty" / "buffer empty".

If a region's file is shorter than promised (the segment was truncated after the read was
planned), the missing bytes are sent as zeros: the response's length prefix is already
on the wire, and clients discard a trailing partial batch.

Not thread-safe: the loop thread only.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterator
from typing import Any

CHUNK_BYTES = 256 * 1024
# In pread mode keep at most this much in the transport before waiting for it to drain.
PREAD_HIGH_WATER_BYTES = 1024 * 1024
# A response of at most this many bytes is copied into ONE transport write, in both modes:
# a follower's or consumer's fetch of one small batch would otherwise cost a send for its
# header, a sendfile and another send for its tail (three syscalls, three TCP segments,
# up to three wake-ups at the reader) on every acks=all request.
COALESCE_BYTES = 64 * 1024
_TCP_FAMILIES = (socket.AF_INET, socket.AF_INET6)


def _file_descriptor(region: Any) -> int:
    file = region.file
    return file if isinstance(file, int) else int(file.fileno())


class RegionList:
    """Several contiguous file regions as ONE records value for the codec (it needs only
    ``nbytes``); the writer expands ``regions`` back into sendfile/pread transfers."""

    __slots__ = ("regions", "nbytes")

    def __init__(self, regions: list[Any]) -> None:
        self.regions = regions
        self.nbytes = sum(int(region.nbytes) for region in regions)


def iter_pieces(buffers: list[Any]) -> Iterator[Any]:
    """Flatten a response: bytes-like items and regions; ``regions`` lists are expanded."""
    for item in buffers:
        if isinstance(item, bytes | bytearray | memoryview):
            yield item
        elif hasattr(item, "regions"):
            yield from item.regions
        else:
            yield item


class ResponseWriter:
    """Writes response buffer lists to one transport in order."""

    def __init__(self, transport: asyncio.Transport, mode: str = "sendfile") -> None:
        self._transport = transport
        # Under TLS the kernel socket carries ciphertext: sendfile would bypass encryption.
        self._mode = "pread" if transport.get_extra_info("sslcontext") is not None else mode
        sock = transport.get_extra_info("socket")
        self._socket_fd = sock.fileno() if sock is not None else -1
        # Only a TCP socket can be corked (see the module doc), through a socket object of
        # our own made at the first cork (:meth:`_cork`).
        self._corkable = (sock is not None and sock.family in _TCP_FAMILIES
                          and hasattr(socket, "TCP_CORK"))
        self._cork_socket: socket.socket | None = None
        self._drained_waiter: asyncio.Future[None] | None = None
        self._paused = False
        self._lost = False
        transport.set_write_buffer_limits(high=0, low=0)

    # ---- flow control from the protocol ----------------------------------------------

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def connection_lost(self) -> None:
        self._lost = True
        self._wake()
        self._close_cork_socket()

    def _wake(self) -> None:
        if self._drained_waiter is not None and not self._drained_waiter.done():
            self._drained_waiter.set_result(None)

    async def drained(self) -> None:
        """Return once the transport's buffer is empty (or the connection is gone)."""
        while self._paused and not self._lost:
            self._drained_waiter = asyncio.get_running_loop().create_future()
            await self._drained_waiter

    # ---- writing ---------------------------------------------------------------------

    async def write(self, buffers: list[Any]) -> None:
        pieces = list(iter_pieces(buffers))
        if sum(len(piece) if isinstance(piece, bytes | bytearray | memoryview)
               else int(piece.nbytes) for piece in pieces) <= COALESCE_BYTES:
            self._write_copied(pieces)
            return
        corked = self._mode == "sendfile" and self._cork(True)
        try:
            for piece in pieces:
                if self._lost:
                    return
                if isinstance(piece, bytes | bytearray | memoryview):
                    if len(piece):
                        self._transport.write(piece)
                elif piece.nbytes:
                    await self._write_region(piece)
        finally:
            if corked and not self._lost:
                self._cork(False)

    def _cork(self, on: bool) -> bool:
        """Set or clear ``TCP_CORK``; False (and never tried again) where the socket is not
        TCP or refuses it.

        The option is set through one socket object per connection, on a duplicate of the
        transport's descriptor: uvloop's transport socket builds and detaches a new Python
        socket object for every ``setsockopt`` (with a ``getsockname`` each time), twice per
        large response.  The duplicate is ours to close, so a writer dropped without
        :meth:`connection_lost` can never close a descriptor the transport still owns."""
        if not self._corkable:
            return False
        try:
            if self._cork_socket is None:
                self._cork_socket = socket.socket(fileno=os.dup(self._socket_fd))
            self._cork_socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, int(on))
        except OSError:
            self._corkable = False
            self._close_cork_socket()
            return False
        return True

    def _close_cork_socket(self) -> None:
        if self._cork_socket is not None:
            self._cork_socket.close()
            self._cork_socket = None

    def _write_copied(self, pieces: list[Any]) -> None:
        """A small response as one write: its regions read into memory (short ones
        padded, see the module doc)."""
        data = bytearray()
        for piece in pieces:
            if isinstance(piece, bytes | bytearray | memoryview):
                data += piece
            elif (nbytes := int(piece.nbytes)) > 0:
                chunk = os.pread(_file_descriptor(piece), nbytes, int(piece.position))
                data += chunk.ljust(nbytes, b"\0")
        if not self._lost:
            self._transport.write(data)

    async def _write_region(self, region: Any) -> None:
        fd = _file_descriptor(region)
        position, remaining = int(region.position), int(region.nbytes)
        while remaining > 0 and not self._lost:
            if self._mode == "sendfile" and self._socket_fd >= 0:
                await self.drained()
                sent = self._try_sendfile(fd, position, remaining)
                if sent:
                    position += sent
                    remaining -= sent
                    continue
            elif self._transport.get_write_buffer_size() > PREAD_HIGH_WATER_BYTES:
                await self.drained()
            chunk = os.pread(fd, min(remaining, CHUNK_BYTES), position)
            if not chunk:
                chunk = bytes(min(remaining, CHUNK_BYTES))  # file truncated: pad, see above
            self._transport.write(chunk)
            position += len(chunk)
            remaining -= len(chunk)

    def _try_sendfile(self, fd: int, position: int, count: int) -> int:
        """Bytes sent by one non-blocking sendfile; 0 when the socket is full or at EOF."""
        try:
            return os.sendfile(self._socket_fd, fd, position, count)
        except BlockingIOError:
            return 0
        except OSError:
            # The pair does not support sendfile (or the file vanished): copy from now on;
            # a vanished file then surfaces from os.pread as the request's error.
            self._mode = "pread"
            return 0
