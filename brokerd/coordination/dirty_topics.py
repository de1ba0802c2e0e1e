"""Topic watch events coalesced into flushes: what changed is marked dirty from any
thread, and one flush on the coordinator's ZooKeeper thread re-reads all of it.

Why: a failover changes thousands of partition states at once; one flush for the burst
costs pipelined reads and one post per topic instead of one flush per event.  A partition
state's change (from :mod:`.state_watch`) is flushed :data:`STATE_SETTLE_S` later, so the
controller's push of the same state usually lands first and the read is skipped; anything
else (a topic created, its assignment or config changed, a state node created) is flushed
at once and takes whatever is already marked with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

# How long a notified partition-state change waits before its flush: the controller's
# push of the same state, sent once its write is answered, lands meanwhile and makes the
# read unneeded.  Changes that nobody pushes (a leader's ISR change) reach the other
# brokers this much later; Kafka batches those for 2.5 s (isr_change_notification).
STATE_SETTLE_S = 0.5


class DirtyTopics:
    """Keys marked per topic (a partition, or the topic cache's ASSIGNMENT / CONFIG) and
    the one flush queued for them.  Thread-safe."""

    def __init__(self, queue_flush: Callable[[], None],
                 settle_s: float = STATE_SETTLE_S) -> None:
        """``queue_flush``: queues the flush, which calls :meth:`take`."""
        self._queue_flush = queue_flush
        self._settle_s = settle_s
        self._lock = threading.Lock()
        self._dirty: dict[str, set[int]] = {}
        self._flush_queued = False
        self._timer: threading.Timer | None = None

    def mark(self, name: str, key: int, settle: bool = False) -> None:
        """Mark ``key`` of ``name``; the first mark of a burst queues the flush (after
        the settle time with ``settle``), later ones join it."""
        with self._lock:
            self._dirty.setdefault(name, set()).add(key)
            if self._flush_queued or (settle and self._timer is not None):
                return
            if settle:
                timer = self._timer = threading.Timer(self._settle_s, self._settled)
            else:
                self._flush_queued = True
        if settle:
            timer.daemon = True
            timer.start()
        else:
            self._queue_flush()

    def marked(self, name: str) -> frozenset[int]:
        """The keys of ``name`` waiting for the next flush."""
        with self._lock:
            return frozenset(self._dirty.get(name, ()))

    def take(self) -> dict[str, set[int]]:
        """Everything marked so far (the flush calls this first)."""
        with self._lock:
            dirty, self._dirty = self._dirty, {}
            self._flush_queued = False
        return dirty

    def _settled(self) -> None:
        with self._lock:
            self._timer = None
            if self._flush_queued:
                return
            self._flush_queued = True
        self._queue_flush()
