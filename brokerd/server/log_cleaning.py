"""Drives the storage layer's log compaction from the broker's event loop.

Each round: ``LogCleaner.plan`` on the loop (cheap), ``CleaningJob.build`` in a worker
thread (reads immutable segments, writes cleaned copies while produce and fetch go on),
``LogCleaner.commit`` back on the loop (a quick segment swap, abandoned by the cleaner if
the log changed meanwhile).  One job at a time, so at most one build holds a thread.

Not thread-safe: create and stop it on the loop thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from brokerd.storage import LogCleaner, LogManager
from brokerd.storage.cleaner_build import CleanedSegments

log = logging.getLogger(__name__)

# Kafka's log.cleaner.backoff.ms is 15 s: how long an idle cleaner sleeps between checks.
DEFAULT_BACKOFF_S = 15.0


class CleanerLoop:
    """The background task that keeps compacted topics compacted."""

    def __init__(self, manager: LogManager, backoff_s: float = DEFAULT_BACKOFF_S,
                 clock: Callable[[], float] = time.time) -> None:
        self._cleaner = LogCleaner(manager)
        self._backoff_s = backoff_s
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        self._build: asyncio.Future[CleanedSegments] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop planning, and wait for a build in flight so no worker writes after close."""
        in_flight = self._build
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if in_flight is not None:
            with contextlib.suppress(Exception):
                await in_flight

    async def clean_once(self) -> bool:
        """Plan, build and commit one cleaning; False when no log needs cleaning."""
        job = self._cleaner.plan(int(self._clock() * 1000))
        if job is None:
            return False
        self._build = asyncio.get_running_loop().run_in_executor(None, job.build)
        try:
            result = await asyncio.shield(self._build)
        except Exception:
            log.exception("cleaning %s-%d failed; it will be retried", *job.key)
            self._cleaner.abort(job)
            return False
        finally:
            self._build = None
        self._cleaner.commit(job, result)
        return True

    async def _run(self) -> None:
        while True:
            try:
                cleaned = await self.clean_once()
            except Exception:
                log.exception("log cleaner round failed")
                cleaned = False
            if not cleaned:
                await asyncio.sleep(self._backoff_s)
