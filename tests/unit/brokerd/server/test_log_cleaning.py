"""brokerd.server.log_cleaning: ``log.cleaner.threads`` cleaners build side by side, never
two on the same log, and the pool resizes live."""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from brokerd.server.log_cleaning import CleanerLoop
from brokerd.storage import LogManager
from brokerd.storage.cleaner import CleaningJob
from brokerd.storage.cleaner_build import CleanedSegments
from tests.unit.brokerd.storage.conftest import FakeClock
from tests.unit.brokerd.storage.test_cleaner import CONFIG, Written, write_updates

HANG_GUARD_S = 30.0


def dirty_manager(tmp_path: Path, clock: FakeClock, topics: list[str]) -> LogManager:
    manager = LogManager([tmp_path / "data"], CONFIG, clock=clock)
    manager.load()
    for topic in topics:
        log = manager.get_or_create(topic, 0)
        written: Written = {}
        write_updates(log, random.Random(topic), 2_000, 50, clock.now_ms, written)
        log.roll()  # everything cleanable
    return manager


class _Builds:
    """Wraps ``CleaningJob.build``: records which logs build at the same time, and holds
    each build until ``release`` is set."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.lock = threading.Lock()
        self.running: list[tuple[str, int]] = []
        self.most_at_once = 0
        self.threads: set[str] = set()
        self.both_running = threading.Event()
        self.release = threading.Event()
        original = CleaningJob.build

        def build(job: CleaningJob) -> CleanedSegments:
            with self.lock:
                self.running.append(job.key)
                self.most_at_once = max(self.most_at_once, len(self.running))
                self.threads.add(threading.current_thread().name)
                if len(self.running) == 2:
                    self.both_running.set()
            try:
                self.release.wait(HANG_GUARD_S)
                return original(job)
            finally:
                with self.lock:
                    self.running.remove(job.key)

        monkeypatch.setattr(CleaningJob, "build", build)


async def _until(predicate: Callable[[], bool], timeout: float = HANG_GUARD_S) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_two_cleaner_threads_clean_two_logs_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    manager = dirty_manager(tmp_path, clock, ["a", "b"])
    builds = _Builds(monkeypatch)

    async def scenario() -> None:
        cleaner = CleanerLoop(manager, backoff_s=0.01, clock=clock, threads=2)
        cleaner.start()
        # both builds are in their threads at the same time before either may finish
        await asyncio.get_running_loop().run_in_executor(None, builds.both_running.wait,
                                                         HANG_GUARD_S)
        assert sorted(builds.running) == [("a", 0), ("b", 0)]
        builds.release.set()
        await _until(lambda: all(cleaner._cleaner.first_dirty_offset(topic, 0) > 0
                                 for topic in "ab"))
        await cleaner.stop()

    asyncio.run(scenario())
    assert builds.most_at_once == 2
    assert builds.threads == {"log-cleaner-0_0", "log-cleaner-1_0"}
    for topic in "ab":
        log = manager.get(topic, 0)
        assert log is not None and log.size_bytes < 2_000 * 10  # compacted to ~50 keys
    manager.close()


def test_one_log_is_never_cleaned_by_two_threads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    manager = dirty_manager(tmp_path, clock, ["only"])
    builds = _Builds(monkeypatch)

    async def scenario() -> None:
        cleaner = CleanerLoop(manager, backoff_s=0.01, clock=clock, threads=3)
        cleaner.start()
        await _until(lambda: len(builds.running) == 1)
        await asyncio.sleep(0.2)  # the two idle cleaners poll meanwhile
        assert builds.running == [("only", 0)]
        builds.release.set()
        await _until(lambda: cleaner._cleaner.first_dirty_offset("only", 0) > 0)
        await cleaner.stop()

    asyncio.run(scenario())
    assert builds.most_at_once == 1
    manager.close()


def test_the_pool_resizes_live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    manager = dirty_manager(tmp_path, clock, ["a", "b"])
    builds = _Builds(monkeypatch)

    async def scenario() -> None:
        cleaner = CleanerLoop(manager, backoff_s=0.01, clock=clock, threads=1)
        cleaner.start()
        await _until(lambda: len(builds.running) == 1)
        await asyncio.sleep(0.2)
        assert len(builds.running) == 1  # one thread: the other log waits
        cleaner.set_threads(2)
        await asyncio.get_running_loop().run_in_executor(None, builds.both_running.wait,
                                                         HANG_GUARD_S)
        cleaner.set_threads(1)
        builds.release.set()
        await _until(lambda: len(cleaner._workers) == 1)  # the surplus cleaner stopped
        await cleaner.stop()

    asyncio.run(scenario())
    assert builds.most_at_once == 2
    manager.close()
