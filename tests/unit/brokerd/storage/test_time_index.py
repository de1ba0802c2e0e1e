from pathlib import Path

import pytest

from brokerd.storage.time_index import TimeIndex


def make(tmp_path: Path, max_size: int = 120) -> TimeIndex:
    return TimeIndex(tmp_path / "x.timeindex", 100, max_size, preallocate=True)


def test_only_increasing_timestamps_are_indexed(tmp_path: Path) -> None:
    index = make(tmp_path)
    index.maybe_append(1000, 100)
    index.maybe_append(1000, 105)
    index.maybe_append(900, 106)
    index.maybe_append(2000, 110)
    assert index.entries == 2
    assert index.max_timestamp == 2000


def test_offset_before_is_a_safe_scan_start(tmp_path: Path) -> None:
    index = make(tmp_path)
    index.maybe_append(1000, 103)
    index.maybe_append(2000, 110)
    assert index.offset_before(1000) == 100  # nothing strictly older: scan the segment
    assert index.offset_before(1001) == 103
    assert index.offset_before(2000) == 103
    assert index.offset_before(99_999) == 110


def test_last_slot_is_reserved_for_the_final_entry(tmp_path: Path) -> None:
    index = make(tmp_path, max_size=24)  # two 12-byte entries
    index.maybe_append(1, 100)
    assert index.is_full
    with pytest.raises(OverflowError):
        index.maybe_append(2, 101)
    index.maybe_append(2, 101, final=True)
    assert index.entries == 2


def test_truncate_and_reload(tmp_path: Path) -> None:
    index = make(tmp_path)
    for timestamp, offset in [(10, 100), (20, 104), (30, 108)]:
        index.maybe_append(timestamp, offset)
    index.truncate_to(104)
    assert index.max_timestamp == 10
    index.close()
    reopened = TimeIndex(index.path, 100, 120, preallocate=False)
    assert reopened.consistent and reopened.entries == 1


def test_zero_filled_file_is_inconsistent(tmp_path: Path) -> None:
    path = tmp_path / "x.timeindex"
    path.write_bytes(bytes(36))
    index = TimeIndex(path, 100, 120, preallocate=False)
    assert index.entries == 0 and not index.consistent


def test_resizing_keeps_whole_entries_so_an_active_segment_is_not_remapped(tmp_path: Path) -> None:
    """65,536 bytes (segment.index.bytes) hold 5,461 twelve-byte entries and 4 bytes
    more: the file stays at whole entries, the size it was preallocated to."""
    index = make(tmp_path, max_size=65_536)
    path = tmp_path / "x.timeindex"
    assert path.stat().st_size == 65_532
    index.maybe_append(1000, 103)
    with index as mapping:
        before = mapping
    index.resize(65_536)  # what LogSegment.make_active asks for
    assert path.stat().st_size == 65_532
    with index as mapping:
        assert mapping is before  # not unmapped, flushed and mapped again
    index.trim()
    assert path.stat().st_size == 12
