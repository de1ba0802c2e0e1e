"""kazoo's threading handler with a ``select`` that costs one system call.

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

Thread-safety: each call builds its own poll object; as kazoo's.
"""

from __future__ import annotations

import math
import select
from collections.abc import Sequence
from typing import Any

from kazoo.handlers.threading import SequentialThreadingHandler

# What select() reports as readable / writable: an error or hang-up counts for both, so
# the caller's next read or write sees it.
_READABLE = select.POLLIN | select.POLLHUP | select.POLLERR | select.POLLNVAL
_WRITABLE = select.POLLOUT | select.POLLHUP | select.POLLERR | select.POLLNVAL


def _fd(fileobj: Any) -> int:
    return fileobj if isinstance(fileobj, int) else int(fileobj.fileno())


def poll_select(rlist: Sequence[Any], wlist: Sequence[Any], xlist: Sequence[Any],
                timeout: float | None = None) -> tuple[list[Any], list[Any], list[Any]]:
    """``select.select``'s contract (lists of the ready objects given), through one
    ``poll`` call; ``timeout`` in seconds, None to wait indefinitely."""
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
    ready = dict(poller.poll(wait_ms))
    return ([f for f in rlist if ready.get(_fd(f), 0) & _READABLE],
            [f for f in wlist if ready.get(_fd(f), 0) & _WRITABLE],
            [f for f in xlist if ready.get(_fd(f), 0) & select.POLLPRI])


class PollingHandler(SequentialThreadingHandler):  # type: ignore[misc]
    """:class:`SequentialThreadingHandler` with :func:`poll_select`."""

    def select(self, *args: Any, **kwargs: Any) -> tuple[list[Any], list[Any], list[Any]]:
        return poll_select(*args, **kwargs)
