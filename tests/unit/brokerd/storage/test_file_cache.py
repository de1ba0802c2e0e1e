"""The open-file cache (brokerd.storage.file_cache): least recently used segment files and
index mappings close first, pinned ones never, retired ones when their last pin goes, a
writer's holds last until its sweep finds them unused, and logs keep every behaviour
when their files were closed and reopened meanwhile."""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from brokerd.protocol.records import build_batch, parse_batch_header
from brokerd.storage import LogConfig, LogManager
from brokerd.storage.checkpoint import (
    CLEAN_SHUTDOWN_MARKER,
    RECOVERY_POINT_CHECKPOINT,
    write_offset_checkpoint,
)
from brokerd.storage.file_cache import OPEN_FILES, FilePin, OpenFileCache, SegmentFile
from brokerd.storage.offset_index import OffsetIndex
from brokerd.storage.segment import LogSegment
from tests.support.open_files import files_held

from .conftest import NOW_MS, FakeClock, batch, commit
from .helpers import offsets, read_all


def held_under(directory: Path) -> tuple[int, int]:
    return files_held("self", directory)


@pytest.fixture
def tiny_budget() -> Iterator[int]:
    """The process's cache at 8 files for one test (xdist workers are processes)."""
    saved = OPEN_FILES.max_open
    for _ in range(2):  # earlier tests' logs in this process may still hold files
        OPEN_FILES.release_idle()
    OPEN_FILES.resize(8)
    yield 8
    OPEN_FILES.resize(saved)


def files(tmp_path: Path, cache: OpenFileCache, count: int) -> list[SegmentFile]:
    return [SegmentFile(tmp_path / f"{i}.log", cache) for i in range(count)]


def test_least_recently_used_files_close_first_and_reopen_on_use(tmp_path: Path) -> None:
    cache = OpenFileCache(2)
    a, b, c = files(tmp_path, cache, 3)
    for item in (a, b, a, c):  # b is now the least recently used
        with item as fd:
            os.pwrite(fd, item.path.name.encode(), 0)
    assert (a.fd >= 0, b.fd >= 0, c.fd >= 0) == (True, False, True)
    assert (cache.open_count, cache.opens, cache.evictions) == (2, 3, 1)
    with b as fd:  # reopened (evicting a), its bytes intact
        assert os.pread(fd, 10, 0) == b"1.log"
    assert (a.fd, cache.open_count, cache.opens) == (-1, 2, 4)


def test_pinned_files_stay_open_beyond_the_budget(tmp_path: Path) -> None:
    cache = OpenFileCache(1)
    a, b, c = files(tmp_path, cache, 3)
    a.pin()
    with b:
        with c:
            assert (a.fd >= 0, b.fd >= 0, c.fd >= 0) == (True, True, True)
            assert cache.open_count == 3
        assert (b.fd >= 0, c.fd, cache.open_count) == (True, -1, 2)
    assert (a.fd >= 0, b.fd, cache.open_count) == (True, -1, 1)  # a is still pinned
    a.unpin()
    assert (a.fd >= 0, cache.open_count) == (True, 1)  # within the budget: stays open


def test_a_retired_file_closes_when_its_last_pin_goes(tmp_path: Path) -> None:
    cache = OpenFileCache(1)
    a, b = files(tmp_path, cache, 2)
    with a as fd:
        os.pwrite(fd, b"region", 0)
    pin = FilePin(a)
    a.retire()
    a.path.unlink()  # a deleted segment: readers holding a region still read it
    with b:  # pressure on the budget: a is pinned, so it stays open
        pass
    assert os.pread(a.fd, 6, 0) == b"region"
    with pytest.raises(ValueError):
        a.pin()
    del pin
    gc.collect()
    assert (a.fd, b.fd, cache.open_count) == (-1, -1, 0)


def test_reopen_follows_renames_and_never_creates_a_file(tmp_path: Path) -> None:
    cache = OpenFileCache(1)
    a, b = files(tmp_path, cache, 2)
    with a as fd:
        os.pwrite(fd, b"moved", 0)
    a.rename(tmp_path / "0.log.deleted")
    with b:
        pass
    with a as fd:
        assert os.pread(fd, 5, 0) == b"moved"
    with b:
        pass
    a.path.unlink()
    with pytest.raises(FileNotFoundError):
        a.pin()
    assert not (tmp_path / "0.log").exists()


def test_indexes_unmap_and_map_again_on_lookup(tmp_path: Path) -> None:
    cache = OpenFileCache(1)
    index = OffsetIndex(tmp_path / "0.index", 100, 4096, preallocate=True, cache=cache)
    for i in range(1, 50):
        index.append(100 + i * 10, i * 1000)
    other = SegmentFile(tmp_path / "other.log", cache)
    with other:
        pass
    assert index.handle() is None and held_under(tmp_path) == (1, 0)
    assert index.lookup(255) == (250, 15000)
    index.truncate_to(300)
    with other:
        pass
    index.flush()  # written since the last flush: mapped again to msync
    index.close()
    assert os.path.getsize(tmp_path / "0.index") == 19 * 8
    reopened = OffsetIndex(tmp_path / "0.index", 100, 4096, preallocate=False, cache=cache)
    assert reopened.consistent and reopened.lookup(10**6) == (290, 19000)


def test_a_region_outlives_its_segments_deletion_and_eviction(tmp_path: Path) -> None:
    cache = OpenFileCache(1)
    segment = LogSegment(tmp_path, 0, 4096, 4096, active=True, created_ms=0, files=cache)
    data = batch(3)
    segment.append(data, [parse_batch_header(data, 0)])
    region = segment.region(0, len(data))
    segment.mark_deleted()
    segment.delete()
    other = SegmentFile(tmp_path / "other.log", cache)
    with other:
        pass
    assert region.read() == bytes(data)
    del region
    gc.collect()
    assert held_under(tmp_path) == (0, 0)  # the last pin went: the deleted file closed


def test_hundreds_of_logs_within_a_tiny_budget(
        tmp_path: Path, clock: FakeClock, tiny_budget: int) -> None:
    data = tmp_path / "data"
    config = LogConfig(segment_bytes=600, file_delete_delay_ms=0)  # a few segments per log
    manager = LogManager([data], config, clock=clock)
    manager.load()
    logs = [manager.get_or_create("t", p) for p in range(200)]
    for log in logs:
        for _ in range(4):
            log.append_as_leader(batch(2, value_size=100), 0)
        commit(log)
    for log in logs:
        log.flush()  # fsyncs through reopened descriptors and mappings
    descriptors, mappings = held_under(data)
    assert descriptors <= tiny_budget and mappings <= tiny_budget
    logs[7].truncate_to(4)
    logs[8].delete_records_before(4)
    for log in logs:
        log.delete_expired_files(clock.now_ms)
    assert logs[9].offset_for_timestamp(NOW_MS + 1) == (0, NOW_MS + 1)  # time indexes
    manager.close()
    assert held_under(data) == (0, 0)
    # As if the broker had crashed before flushing anything: recover every log in full.
    (data / CLEAN_SHUTDOWN_MARKER).unlink()
    write_offset_checkpoint(data / RECOVERY_POINT_CHECKPOINT, {})
    reopened = LogManager([data], config, clock=clock)
    reopened.load()
    assert held_under(data)[0] <= tiny_budget
    for partition in range(200):
        recovered = reopened.get("t", partition)
        assert recovered is not None
        end = 4 if partition == 7 else 8
        start = 4 if partition == 8 else 0
        assert offsets(read_all(recovered)) == [(i, i + 1) for i in range(start, end, 2)]
    reopened.close()
    assert held_under(data) == (0, 0)


def test_a_writers_hold_pins_once_and_the_sweep_releases_it_once_unused(
        tmp_path: Path) -> None:
    cache = OpenFileCache(4)
    (a,) = files(tmp_path, cache, 1)
    for _ in range(3):
        a.hold()
    assert (a.held, a.pins, a.fd >= 0, cache.held_count, cache.open_count) == (
        True, 1, True, 1, 1)
    with a:  # another user (a flush worker, a reader) still pins it as usual
        assert a.pins == 2
    assert cache.release_idle() == 0  # used since the hold: kept for the next sweep
    a.hold()
    assert cache.release_idle() == 0
    assert cache.release_idle() == 1  # a whole sweep interval without use
    assert (a.held, a.pins, a.fd >= 0, cache.held_count, cache.open_count) == (
        False, 0, True, 0, 1)
    (tmp_path / "b.log").touch()
    for item in (SegmentFile(tmp_path / "b.log", cache), *files(tmp_path, cache, 4)[1:]):
        with item:
            pass
    assert a.fd == -1  # unpinned: the least recently used file closed first


def test_writers_hold_at_most_half_the_budget_and_eviction_skips_them(
        tmp_path: Path) -> None:
    cache = OpenFileCache(4)
    a, b, c, *others = files(tmp_path, cache, 7)
    for item in (a, b, c):
        item.hold()
    assert (a.held, b.held, c.held, c.fd) == (True, True, False, -1)  # c pins per use
    for item in others:
        with item:
            pass
    assert (a.fd >= 0, b.fd >= 0, cache.open_count, cache.evictions) == (True, True, 4, 2)


def test_retiring_a_held_file_closes_it_and_sealing_releases_a_segments_holds(
        tmp_path: Path) -> None:
    cache = OpenFileCache(8)
    (a,) = files(tmp_path, cache, 1)
    a.hold()
    a.retire()
    assert (a.held, a.fd, cache.held_count, cache.open_count) == (False, -1, 0, 0)
    segment = LogSegment(tmp_path, 0, 10, 4096, active=True, created_ms=0, files=cache)
    for base in (0, 2, 4):  # the later appends write index entries through the hold
        data = build_batch([(b"k", b"v" * 20, [], NOW_MS + base)] * 2, base_offset=base)
        segment.append(data, [parse_batch_header(data, 0)])
    assert cache.held_count == 3 and segment.offset_index.entries == 2
    segment.seal()
    assert (cache.held_count, cache.open_count, segment.offset_index.pins) == (0, 3, 0)
    assert segment.offset_index.lookup(10**6)[0] == 4


def test_a_sweep_releases_only_the_holds_its_own_thread_took(tmp_path: Path) -> None:
    cache = OpenFileCache(4)
    a, b = files(tmp_path, cache, 2)
    a.hold()
    writer = threading.Thread(target=b.hold)
    writer.start()
    writer.join(60)
    assert (cache.release_idle(), cache.release_idle()) == (0, 1)
    assert (a.held, b.held) == (False, True)  # b's writer must sweep its own holds


def test_an_idle_partitions_files_are_unpinned_by_two_sweeps_and_then_evictable(
        tmp_path: Path, clock: FakeClock, tiny_budget: int) -> None:
    data = tmp_path / "data"
    manager = LogManager([data], LogConfig(), clock=clock)
    manager.load()
    busy, idle = (manager.get_or_create("t", p) for p in range(2))
    idle.append_as_leader(batch(2), 0)  # holds its three files: the busy one gets one
    for _ in range(3):
        busy.append_as_leader(batch(2), 0)
        OPEN_FILES.release_idle()
    assert OPEN_FILES.held_count == 3  # the second sweep released the idle partition's
    others = [manager.get_or_create("t", p) for p in range(2, 6)]
    for log in others:
        log.append_as_leader(batch(1), 0)
    assert held_under(data / "t-1") == (0, 0)  # closed for the busy ones' files
    descriptors, mappings = held_under(data)
    assert descriptors <= tiny_budget and mappings <= tiny_budget
    manager.close()
    assert OPEN_FILES.held_count == 0 and held_under(data) == (0, 0)
