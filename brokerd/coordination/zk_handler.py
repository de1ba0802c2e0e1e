"""kazoo's threading handler with a ``select`` that costs one system call, and sockets
read through a buffer.

Why: kazoo's connection thread calls ``handler.select`` before every read of a header or
body and every write, so once per ZooKeeper message or more.  kazoo's own
``selector_select`` builds an epoll selector for each call (``epoll_create``, an
``epoll_ctl`` per descriptor, ``epoll_wait``, ``close``): four system calls, each
releasing the GIL and waiting to get it back.  In a 30,000-partition failover (tens of
thousands of writes, reads and watch events) the connection thread of each survivor spent
about a quarter of its samples creating and closing selectors, behind the event loop's
hold on the GIL (py-spy, ``bench/README.md``).  ``select.poll`` objects live in user
space, so a call here makes only the ``poll`` system call, and unlike ``select.select``
it has no limit on descriptor numbers (a broker holds thousands of files).

kazoo also reads every message in two ``recv`` calls (its length, then the rest), each
after a ``select`` of its own, and selects once more before each message: five system
calls per message, each letting go of the GIL and waiting to get it back from the event
loop.  A failover at 30,000 partitions brings each survivor 30,000 watch notifications in
a few seconds.  So the handler's sockets (:class:`BufferedSocket`) read up to
``READ_CHUNK`` bytes at a time and serve kazoo's small reads from that; kazoo skips its
``select`` while a socket reports ``pending()`` bytes (its path for TLS sockets, whose
buffered bytes no ``select`` sees), and :func:`poll_select` reports such a socket
readable without waiting.  Even so each message still cost a ``poll`` (kazoo's loop
selects once per message) and kazoo's per-message bookkeeping, about a third of the
connection thread's time in a failover (py-spy, ``bench/README.md``): the state watch
therefore takes the notifications that follow one another in the buffer straight from it
(:meth:`BufferedSocket.take_buffered_message`, :mod:`.state_watch`).

Thread-safety: each call builds its own poll object; as kazoo's.  A socket is read by
kazoo's connection thread only.
"""

from __future__ import annotations

import math
import select
import socket
import ssl
import struct
from collections.abc import Sequence
from typing import Any

from kazoo.handlers.threading import SequentialThreadingHandler

# What select() reports as readable / writable: an error or hang-up counts for both, so
# the caller's next read or write sees it.
_READABLE = select.POLLIN | select.POLLHUP | select.POLLERR | select.POLLNVAL
_WRITABLE = select.POLLOUT | select.POLLHUP | select.POLLERR | select.POLLNVAL


# Bytes asked of the kernel per read of a ZooKeeper connection.
READ_CHUNK = 65536
# A message's length prefix, then its reply header's xid (the rest: zxid, err).
_LENGTH_AND_XID = struct.Struct(">ii")


class BufferedSocket:
    """A connected socket whose reads go through a user-space buffer; everything else
    (send, setblocking, fileno, close, …) is the socket's own."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._data = b""
        self._pos = 0

    def pending(self) -> int:
        """Bytes read from the kernel and not yet handed out."""
        return len(self._data) - self._pos

    def recv(self, size: int) -> bytes:
        """Up to ``size`` bytes: buffered ones if any, else from one kernel read of up to
        ``READ_CHUNK`` (b"" at end of stream, as ``socket.recv``)."""
        if self._pos < len(self._data):
            chunk = self._data[self._pos:self._pos + size]
            self._pos += len(chunk)
            return chunk
        data = self._sock.recv(max(size, READ_CHUNK))
        if len(data) <= size:
            return data
        self._data, self._pos = data, size
        return data[:size]

    def take_buffered_message(self, xid: int) -> bytes | None:
        """The next message (its reply header and body, without the length prefix) if all
        of it is already buffered and its header carries ``xid``, consumed; else None, and
        nothing consumed.  Never reads from the kernel."""
        data, pos = self._data, self._pos
        if len(data) - pos < _LENGTH_AND_XID.size:
            return None
        length, message_xid = _LENGTH_AND_XID.unpack_from(data, pos)
        end = pos + 4 + length
        if message_xid != xid or end > len(data):
            return None
        self._pos = end
        return data[pos + 4:end]

    def fileno(self) -> int:
        return self._sock.fileno()  # kazoo's select asks per message: skip __getattr__

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def _fd(fileobj: Any) -> int:
    return fileobj if isinstance(fileobj, int) else int(fileobj.fileno())


def poll_select(rlist: Sequence[Any], wlist: Sequence[Any], xlist: Sequence[Any],
                timeout: float | None = None) -> tuple[list[Any], list[Any], list[Any]]:
    """``select.select``'s contract (lists of the ready objects given), through one
    ``poll`` call; ``timeout`` in seconds, None to wait indefinitely.  A
    :class:`BufferedSocket` holding unread bytes is readable at once."""
    buffered = [f for f in rlist if isinstance(f, BufferedSocket) and f.pending()]
    masks: dict[int, int] = {}
    for fileobjs, mask in ((rlist, select.POLLIN), (wlist, select.POLLOUT),
                           (xlist, select.POLLPRI)):
        for fileobj in fileobjs:
            fd = _fd(fileobj)
            masks[fd] = masks.get(fd, 0) | mask
    poller = select.poll()
    for fd, mask in masks.items():
        poller.register(fd, mask)
    # A negative timeout polls once, as selectors do; poll() itself would wait forever.
    wait_ms = None if timeout is None else max(0, math.ceil(timeout * 1000))
    ready = dict(poller.poll(0 if buffered else wait_ms))
    return ([f for f in rlist if f in buffered or ready.get(_fd(f), 0) & _READABLE],
            [f for f in wlist if ready.get(_fd(f), 0) & _WRITABLE],
            [f for f in xlist if ready.get(_fd(f), 0) & select.POLLPRI])


class PollingHandler(SequentialThreadingHandler):  # type: ignore[misc]
    """:class:`SequentialThreadingHandler` with :func:`poll_select` and plain TCP
    connections read through :class:`BufferedSocket` (TLS ones as kazoo makes them)."""

    def select(self, *args: Any, **kwargs: Any) -> tuple[list[Any], list[Any], list[Any]]:
        return poll_select(*args, **kwargs)

    def create_connection(self, *args: Any, **kwargs: Any) -> Any:
        sock = super().create_connection(*args, **kwargs)
        return sock if isinstance(sock, ssl.SSLSocket) else BufferedSocket(sock)
