"""Drives the storage layer's log compaction from the broker's event loop.

Each cleaning: ``LogCleaner.plan`` on the loop (cheap), ``CleaningJob.build`` in a cleaner
thread (reads immutable segments, writes cleaned copies while produce and fetch go on),
``LogCleaner.commit`` back on the loop (a quick segment swap, abandoned by the cleaner if
the log changed meanwhile).

``log.cleaner.threads`` cleaners run side by side, as Kafka's CleanerThreads do: each is a
task on the loop with its own thread for builds.  They never clean the same log at once
(``LogCleaner.plan`` skips a log with a job in flight).  :meth:`CleanerLoop.set_threads`
resizes the pool live: new cleaners start at once, surplus ones finish the cleaning they
are on and then stop.

Not thread-safe: create, resize and stop it on the loop thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from brokerd.storage import LogCleaner, LogManager
from brokerd.storage.cleaner_build import CleanedSegments

log = logging.getLogger(__name__)

# Kafka's log.cleaner.backoff.ms is 15 s: how long an idle cleaner sleeps between checks.
DEFAULT_BACKOFF_S = 15.0


class CleanerLoop:
    """The background cleaners that keep compacted topics compacted."""

    def __init__(self, manager: LogManager, backoff_s: float = DEFAULT_BACKOFF_S,
                 clock: Callable[[], float] = time.time, threads: int = 1) -> None:
        self._cleaner = LogCleaner(manager)
        self._backoff_s = backoff_s
        self._clock = clock
        self._threads = max(1, threads)
        self._workers: dict[int, asyncio.Task[None]] = {}
        self._builds: set[asyncio.Future[CleanedSegments]] = set()
        self._started = False

    @property
    def threads(self) -> int:
        return self._threads

    def start(self) -> None:
        self._started = True
        self._spawn()

    def set_threads(self, threads: int) -> None:
        """Resize to ``threads`` cleaners (``log.cleaner.threads`` changed)."""
        threads = max(1, threads)
        if threads != self._threads:
            log.info("log cleaner threads: %d -> %d", self._threads, threads)
        self._threads = threads
        if self._started:
            self._spawn()

    async def stop(self) -> None:
        """Stop the cleaners, and wait for builds in flight so no thread writes after close."""
        self._started = False
        workers = list(self._workers.values())
        in_flight = list(self._builds)
        for task in workers:
            task.cancel()
        for task in workers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for build in in_flight:
            with contextlib.suppress(Exception):
                await build

    async def clean_once(self, executor: ThreadPoolExecutor | None = None) -> bool:
        """Plan, build and commit one cleaning; False when no log needs cleaning."""
        job = self._cleaner.plan(int(self._clock() * 1000))
        if job is None:
            return False
        build = asyncio.get_running_loop().run_in_executor(executor, job.build)
        self._builds.add(build)
        try:
            result = await asyncio.shield(build)
        except Exception:
            log.exception("cleaning %s-%d failed; it will be retried", *job.key)
            self._cleaner.abort(job)
            return False
        finally:
            self._builds.discard(build)
        self._cleaner.commit(job, result)
        return True

    def _spawn(self) -> None:
        loop = asyncio.get_running_loop()
        for index in range(self._threads):
            if index not in self._workers:
                self._workers[index] = loop.create_task(self._run(index),
                                                        name=f"log-cleaner-{index}")

    async def _run(self, index: int) -> None:
        executor = ThreadPoolExecutor(1, thread_name_prefix=f"log-cleaner-{index}")
        try:
            while index < self._threads:
                try:
                    cleaned = await self.clean_once(executor)
                except Exception:
                    log.exception("log cleaner round failed")
                    cleaned = False
                if not cleaned:
                    await asyncio.sleep(self._backoff_s)
        finally:
            if self._workers.get(index) is asyncio.current_task():
                del self._workers[index]
            executor.shutdown(wait=False)
