"""A set of zero-argument callbacks fired on an event (an append, a high watermark move).

Why not asyncio.Event: waiters come and go per request (a long-poll fetch listens on all
its partitions and removes itself when answered), and firing must cost nothing when
nobody listens, which is the common case on a busy partition.
"""

from __future__ import annotations

from collections.abc import Callable

Listener = Callable[[], None]


class Listeners:
    """Callbacks called in no particular order on :meth:`fire`; not thread-safe."""

    def __init__(self) -> None:
        self._callbacks: set[Listener] = set()

    def add(self, callback: Listener) -> None:
        self._callbacks.add(callback)

    def remove(self, callback: Listener) -> None:
        self._callbacks.discard(callback)

    def fire(self) -> None:
        if self._callbacks:
            for callback in list(self._callbacks):
                callback()
