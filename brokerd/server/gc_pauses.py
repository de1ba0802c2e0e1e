"""Keep the cyclic garbage collector's pauses short, and log the long ones.

Why: CPython's collector stops every thread while it walks the generation it collects,
and a full collection walks every container object the broker holds.  With 30,000
partitions that is millions of objects: full collections paused the broker for 0.8-2.4 s
each, every few seconds while topics were created or a failover moved leaders, mostly
collecting nothing (the partitions' objects live on).  Those pauses were the event-loop
stalls that delayed failovers (late ISR checks, pushes and Metadata answers).

So after each full collection the survivors are frozen (``gc.freeze``: moved to the
permanent generation, which collections do not walk): the next full collection walks
only what was allocated since.  Reference counting still frees frozen objects; what a
frozen object in a reference cycle leaves behind when it dies is reclaimed by a sweep
every :data:`SWEEP_INTERVAL_S`, when everything is unfrozen and the next full collection
walks it all (one long pause an hour, logged like any other).
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

LOGGED_PAUSE_S = 0.1
SWEEP_INTERVAL_S = 3600.0


class PauseKeeper:
    """A ``gc.callbacks`` entry: times each collection, freezes after full ones."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 logged_pause_s: float = LOGGED_PAUSE_S,
                 sweep_interval_s: float = SWEEP_INTERVAL_S) -> None:
        self._clock = clock
        self.logged_pause_s = logged_pause_s
        self.sweep_interval_s = sweep_interval_s
        self._next_sweep = clock() + sweep_interval_s
        self._started = self._started_cpu = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started, self._started_cpu = time.perf_counter(), time.thread_time()
            return
        pause = time.perf_counter() - self._started
        if pause >= self.logged_pause_s:
            # The CPU time too: on an oversubscribed machine the collecting thread is also
            # descheduled mid-collection, and the wall time alone overstated the collector
            # (in the 30,000-partition failover, pauses of 107-186 ms took 34-92 ms of CPU).
            # Not gc.get_freeze_count(): it walks the frozen objects one by one, and with
            # 30,000 partitions (2.3 million of them) it held the GIL for ~165 ms in the
            # middle of a failover, longer than the pause it was logging.
            log.warning("garbage collection of generation %d paused every thread for %.0f ms "
                        "(%.0f ms of CPU; %d objects collected)", info["generation"],
                        pause * 1000, (time.thread_time() - self._started_cpu) * 1000,
                        info["collected"])
        if info["generation"] == 2:
            self.after_full_collection()

    def after_full_collection(self) -> None:
        now = self._clock()
        if now >= self._next_sweep:
            self._next_sweep = now + self.sweep_interval_s
            gc.unfreeze()  # the next full collection walks everything once
        else:
            gc.freeze()


def freeze_new_objects() -> None:
    """Freeze every object tracked now, as after a full collection (``gc.freeze`` moves the
    generations' lists whole: constant time), when pauses are being kept short.

    For work that makes long-lived objects in bursts, between its slices: reconciling a
    new 3,000-partition topic makes a few hundred thousand (logs, segments, indexes,
    replicas), and the next full collection walked them all: a 385 ms pause of every
    thread, an acks=all producer's p99 going from 5-12 ms to 450-700 ms meanwhile."""
    if any(isinstance(callback, PauseKeeper) for callback in gc.callbacks):
        gc.freeze()


def keep_pauses_short() -> PauseKeeper:
    keeper = PauseKeeper()
    gc.callbacks.append(keeper)
    return keeper
