"""Topic watch events coalesced into flushes: what changed is marked dirty from any
thread, and one flush on the coordinator's ZooKeeper thread re-reads all of it.

Why: a failover changes thousands of partition states at once; one flush for the burst
costs pipelined reads and one post per topic instead of one flush per event.

A partition state's change (from :mod:`.state_watch`) settles before it is read, so that
the controller's push of the same state (:mod:`.state_feed`) can land first and make the
read unneeded (the flush reads only what nothing held covers).  Settling changes are
looked at every :data:`STATE_SETTLE_S`: a change the controller would not push to this
broker is read at the next look, and one it would push (a partition this broker hosts,
when another broker is the controller) once it has waited :data:`PUSH_WAIT_S`.  Why wait
that long: in the 30,000-partition failover the pushes reached a busy survivor up to ~2 s
after the writes were notified, so the fixed 0.5 s settle this replaced read back
thousands of states that were pushed a moment later, a tenth of that survivor's GIL time
spent on work done twice, and ZooKeeper answered those reads while the controller was
still writing (bench/README.md).

Anything else (a topic created, its assignment or config changed, a state node created or
deleted) is urgent: flushed at once, taking along the settling changes that wait for no
push.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from itertools import takewhile
from time import monotonic

# How often settling changes are looked at: a change nobody pushes here (a state of a
# partition this broker does not host, or any change on the controller's own broker) is
# read at most this long after its notification.
STATE_SETTLE_S = 0.5
# How long a change the controller pushes here waits for its push before it is read.  A
# leader's ISR change is never pushed, so followers learn it this much later: Kafka batches
# ISR change propagation for 2.5 s too (isr_change_notification).
PUSH_WAIT_S = 2.5

Key = tuple[str, int]


class DirtyTopics:
    """Keys marked per topic (a partition, or the topic cache's ASSIGNMENT / CONFIG) and
    the one flush queued for them.  Thread-safe."""

    def __init__(self, queue_flush: Callable[[], None],
                 pushed_here: Callable[[str, int], bool] = lambda name, partition: False,
                 settle_s: float = STATE_SETTLE_S, push_wait_s: float = PUSH_WAIT_S,
                 clock: Callable[[], float] = monotonic) -> None:
        """``queue_flush``: queues the flush, which calls :meth:`take`; ``pushed_here``:
        whether the controller pushes a partition's changes to this broker."""
        self._queue_flush = queue_flush
        self._pushed_here = pushed_here
        self._settle_s = settle_s
        self._push_wait_s = push_wait_s
        self._clock = clock
        self._lock = threading.Lock()
        self._dirty: dict[str, set[int]] = {}
        self._settling: set[Key] = set()  # read at the next look
        # changes pushed here -> when first marked; in marking order, so the oldest lead
        self._awaiting_push: dict[Key, float] = {}
        self._flush_queued = False
        self._timer: threading.Timer | None = None

    def mark(self, name: str, key: int) -> None:
        """Mark ``key`` of ``name`` urgently: the first mark of a burst queues the flush,
        later ones join it."""
        with self._lock:
            self._mark_due([(name, key)])
            if self._flush_queued:
                return
            self._flush_queued = True
        self._queue_flush()

    def state_changed(self, name: str, partition: int, changed: bool) -> None:
        """The state watch's report (:mod:`.state_watch`): a change settles; a creation or
        deletion is urgent (its version is unknown, so the node must be read)."""
        if changed:
            self.settle(name, partition, self._pushed_here(name, partition))
        else:
            self.mark(name, partition)

    def settle(self, name: str, partition: int, pushed_here: bool) -> None:
        """A partition state changed: read it once settled.  ``pushed_here``: the
        controller pushes its changes of this partition to this broker."""
        with self._lock:
            key = (name, partition)
            if pushed_here:
                self._awaiting_push.setdefault(key, self._clock())
            else:
                self._settling.add(key)
            if self._timer is not None:
                return
            timer = self._timer = threading.Timer(self._settle_s, self._look)
        timer.daemon = True
        timer.start()

    def marked(self, name: str) -> frozenset[int]:
        """The keys of ``name`` waiting to be read, settling or not."""
        with self._lock:
            settling = {key for topic, key in (*self._settling, *self._awaiting_push)
                        if topic == name}
            return frozenset(self._dirty.get(name, set()) | settling)

    def take(self) -> dict[str, set[int]]:
        """Everything due so far (the flush calls this first), with the settling changes
        not waiting for a push: a flush already under way costs them nothing more."""
        with self._lock:
            self._mark_due(self._settling)
            self._settling.clear()
            dirty, self._dirty = self._dirty, {}
            self._flush_queued = False
        return dirty

    def _look(self) -> None:
        """Timer thread: hand the settled changes to the next flush, and look again while
        any still wait."""
        with self._lock:
            cutoff = self._clock() - self._push_wait_s
            waited = list(takewhile(lambda key: self._awaiting_push[key] <= cutoff,
                                    self._awaiting_push))
            for key in waited:
                del self._awaiting_push[key]
            due = [*self._settling, *waited]
            self._settling.clear()
            self._mark_due(due)
            timer = self._timer = (threading.Timer(self._settle_s, self._look)
                                   if self._awaiting_push else None)
            queue = bool(due) and not self._flush_queued
            if queue:
                self._flush_queued = True
        if timer is not None:
            timer.daemon = True
            timer.start()
        if queue:
            self._queue_flush()

    def _mark_due(self, keys: Iterable[Key]) -> None:
        """Under the lock: hand ``keys`` to the next flush."""
        for name, partition in keys:
            self._dirty.setdefault(name, set()).add(partition)
