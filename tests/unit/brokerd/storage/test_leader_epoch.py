import threading
from collections.abc import Mapping
from pathlib import Path

import pytest

from brokerd.storage import Log, LogConfig, leader_epoch
from brokerd.storage.checkpoint import read_epoch_checkpoint
from brokerd.storage.checkpoint_writer import CheckpointWriter, replace_files
from brokerd.storage.directory_remover import DIRECTORY_REMOVER
from brokerd.storage.leader_epoch import LeaderEpochCache
from brokerd.storage.manager import LogManager

from .conftest import FakeClock, batch


def cache_with(tmp_path: Path, *entries: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache(tmp_path / "leader-epoch-checkpoint")
    for epoch, offset in entries:
        cache.assign(epoch, offset)
    return cache


def test_assign_keeps_only_newer_epochs_and_persists(tmp_path: Path) -> None:
    cache = cache_with(tmp_path, (0, 0), (0, 10), (2, 50), (1, 60))
    assert cache.entries == [(0, 0), (2, 50)]
    cache.flush()
    assert LeaderEpochCache(cache.path).entries == [(0, 0), (2, 50)]


def test_assign_drops_entries_that_never_got_data(tmp_path: Path) -> None:
    cache = cache_with(tmp_path, (0, 0), (1, 50), (2, 50))
    assert cache.entries == [(0, 0), (2, 50)]


def test_end_offset_for_epoch(tmp_path: Path) -> None:
    cache = cache_with(tmp_path, (1, 0), (3, 40), (4, 90))
    assert cache.end_offset_for(0, 120) == (0, 0)  # older than all: where they start
    assert cache.end_offset_for(1, 120) == (1, 40)
    assert cache.end_offset_for(2, 120) == (1, 40)  # never led: answer the epoch before it
    assert cache.end_offset_for(3, 120) == (3, 90)
    assert cache.end_offset_for(4, 120) == (4, 120)
    assert cache.end_offset_for(9, 120) == (4, 120)
    assert cache_with(tmp_path / "empty").end_offset_for(3, 0) == (-1, -1)


def test_truncation_from_both_ends(tmp_path: Path) -> None:
    cache = cache_with(tmp_path, (1, 0), (3, 40), (4, 90))
    cache.truncate_from_end(90)
    assert cache.entries == [(1, 0), (3, 40)]
    cache.truncate_from_start(55)
    assert cache.entries == [(3, 55)]
    cache.flush()
    assert LeaderEpochCache(cache.path).entries == [(3, 55)]


# ---- asynchronous persistence ------------------------------------------------------------


class LostWrites(CheckpointWriter):
    """Every write is lost: the process crashes before any lands."""

    def __init__(self) -> None:
        super().__init__()
        self.submitted: list[Path] = []

    def submit(self, path: Path, data: bytes) -> None:
        self.submitted.append(path)

    def wait(self, path: Path) -> None:
        pass


class HeldWrites:
    """Writes that wait for the test's ``gate``; ``landed`` records each (path, entries)."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.landed: list[tuple[Path, list[tuple[int, int]]]] = []
        self.directory_existed: list[bool] = []

    def __call__(self, files: Mapping[Path, bytes]) -> dict[Path, Exception]:
        assert self.gate.wait(10)
        self.directory_existed.extend(path.parent.is_dir() for path in files)
        failed = replace_files(files)
        self.landed.extend((path, read_epoch_checkpoint(path)) for path in files)
        return failed


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> HeldWrites:
    writes = HeldWrites()
    monkeypatch.setattr(leader_epoch, "EPOCH_CHECKPOINT_WRITER", CheckpointWriter(writes))
    return writes


def test_changes_apply_in_memory_at_once_and_reach_the_file_in_order(
        tmp_path: Path, held: HeldWrites) -> None:
    cache = cache_with(tmp_path, (1, 0), (3, 40), (4, 90))
    cache.truncate_from_end(60)
    cache.assign(5, 60)
    assert cache.entries == [(1, 0), (3, 40), (5, 60)]  # before any write landed
    assert not cache.path.exists()
    held.gate.set()
    cache.flush()
    assert LeaderEpochCache(cache.path).entries == [(1, 0), (3, 40), (5, 60)]
    assert held.landed[-1][1] == [(1, 0), (3, 40), (5, 60)]  # the last write is the latest
    assert len(held.landed) <= 5  # coalesced while the first was held


def test_restore_rebuilds_the_tail_from_batches() -> None:
    cache = LeaderEpochCache(Path("/nonexistent/cp"), LostWrites())
    cache.assign(1, 0)
    cache.assign(3, 50)  # stale: the log says epoch 2 wrote from 40 on
    for epoch, offset in [(1, 30), (2, 40), (2, 55), (2, 60)]:
        cache.restore(epoch, offset)
    assert cache.entries == [(1, 0), (2, 40)]
    cache.restore(4, 70)
    assert cache.entries == [(1, 0), (2, 40), (4, 70)]
    cache.restore(4, 80)  # already covered: no change
    assert cache.entries == [(1, 0), (2, 40), (4, 70)]


def append_epochs(log: Log, epochs: list[int]) -> None:
    for epoch in epochs:
        log.append_as_leader(batch(2), leader_epoch=epoch)


def test_a_crash_before_the_checkpoint_write_loses_no_epoch(
        tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    log = Log(tmp_path / "t-0", LogConfig(), clean_shutdown=True, clock=clock)
    append_epochs(log, [0, 0, 1])
    log.flush()  # recovery point 6; the checkpoint holds epochs 0 and 1
    lost = LostWrites()
    monkeypatch.setattr(leader_epoch, "EPOCH_CHECKPOINT_WRITER", lost)
    log = Log(log.directory, LogConfig(), clean_shutdown=True, clock=clock)  # reopen: lossy
    append_epochs(log, [1, 3, 3, 4])  # epochs 3 and 4 never reach the file
    log.truncate_to(12)  # drops epoch 4's batch: a truncation lost as well
    append_epochs(log, [5])
    expected = log.leader_epoch_cache.entries
    assert expected == [(0, 0), (1, 4), (3, 8), (5, 12)] and lost.submitted
    assert read_epoch_checkpoint(log.leader_epoch_cache.path) == [(0, 0), (1, 4)]

    monkeypatch.undo()
    recovered = Log(log.directory, LogConfig(), clean_shutdown=False, recovery_point=6,
                    clock=clock)
    assert recovered.leader_epoch_cache.entries == expected
    recovered.close()
    assert read_epoch_checkpoint(log.leader_epoch_cache.path) == expected


def test_flush_moves_the_recovery_point_only_once_epochs_are_on_disk(
        tmp_path: Path, clock: FakeClock, held: HeldWrites) -> None:
    log = Log(tmp_path / "t-0", LogConfig(), clean_shutdown=True, clock=clock)
    append_epochs(log, [2, 2])
    flushing = threading.Thread(target=log.flush)
    flushing.start()
    flushing.join(0.2)
    assert flushing.is_alive() and log.recovery_point == 0
    held.gate.set()
    flushing.join(10)
    assert log.recovery_point == 4
    assert read_epoch_checkpoint(log.leader_epoch_cache.path) == [(2, 0)]


def test_deleting_a_log_with_a_pending_epoch_write_writes_nothing_afterwards(
        tmp_path: Path, clock: FakeClock, held: HeldWrites) -> None:
    manager = LogManager([tmp_path / "data"], LogConfig(), clock=clock)
    manager.load()
    log = manager.get_or_create("t", 0)
    append_epochs(log, [7])
    deleting = threading.Thread(target=manager.delete, args=("t", 0))
    deleting.start()
    deleting.join(0.2)
    assert deleting.is_alive()  # the close waits for the epoch write
    held.gate.set()
    deleting.join(10)
    assert not deleting.is_alive()
    assert held.directory_existed == [True]
    DIRECTORY_REMOVER.wait()  # the renamed directory is removed in the background
    assert [p.name for p in (tmp_path / "data").iterdir() if p.is_dir()] == []
