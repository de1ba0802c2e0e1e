"""Reopening after crashes and damage gives exactly the valid prefix of what was written.

A crash image is a copy of the partition directory taken while the log is open: the page
cache is what a crash (of the process) leaves on disk, including untrimmed indexes.
"""

import shutil
from pathlib import Path

import pytest

from brokerd.storage import Log, LogConfig
from brokerd.storage.segment import LogSegment

from .conftest import FakeClock, batch
from .helpers import offsets, read_all

CONFIG = LogConfig(segment_bytes=2500, index_interval_bytes=300)


def written_log(tmp_path: Path, clock: FakeClock, batches: int = 30) -> Log:
    """Several segments of 3-record batches (offsets 3i..3i+2)."""
    log = Log(tmp_path / "t-0", CONFIG, clean_shutdown=True, clock=clock)
    for i in range(batches):
        log.append_as_leader(batch(3, value_size=40 + i), leader_epoch=1)
    assert len(log.segments) >= 3
    return log


def crash_image(log: Log, tmp_path: Path) -> Path:
    image = tmp_path / "crash" / "t-0"
    log.leader_epoch_cache.flush()  # no background checkpoint rename during the copy
    shutil.copytree(log.directory, image)
    return image


def reopen(directory: Path, clock: FakeClock, clean: bool = False, recovery_point: int = 0) -> Log:
    return Log(
        directory, CONFIG, clean_shutdown=clean, recovery_point=recovery_point, clock=clock
    )


def log_file(directory: Path, base_offset: int) -> Path:
    return directory / f"{base_offset:020d}.log"


def test_crash_image_reopens_with_everything(tmp_path: Path, clock: FakeClock) -> None:
    log = written_log(tmp_path, clock)
    expected = log.read(0, 1 << 30).read()
    recovered = reopen(crash_image(log, tmp_path), clock)
    assert recovered.read(0, 1 << 30).read() == expected
    assert recovered.log_end_offset == 90 and recovered.recovery_point == 90
    for segment in recovered.segments[:-1]:
        assert segment.offset_index.path.stat().st_size == 8 * segment.offset_index.entries


def test_garbage_after_the_last_batch_is_cut(tmp_path: Path, clock: FakeClock) -> None:
    log = written_log(tmp_path, clock)
    expected = log.read(0, 1 << 30).read()
    image = crash_image(log, tmp_path)
    active = log_file(image, log.segments[-1].base_offset)
    valid_size = active.stat().st_size
    with active.open("ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x5a" + b"\xff" * 500)
    recovered = reopen(image, clock)
    assert active.stat().st_size == valid_size
    assert recovered.read(0, 1 << 30).read() == expected
    assert recovered.append_as_leader(batch(1), 1).base_offset == 90


def test_torn_last_batch_is_dropped(tmp_path: Path, clock: FakeClock) -> None:
    log = written_log(tmp_path, clock)
    image = crash_image(log, tmp_path)
    active = log_file(image, log.segments[-1].base_offset)
    with active.open("r+b") as f:
        f.truncate(active.stat().st_size - 7)
    recovered = reopen(image, clock)
    assert recovered.log_end_offset == 87
    assert offsets(read_all(recovered))[-1] == (84, 86)
    assert recovered.append_as_leader(batch(1), 1).base_offset == 87


def test_corruption_mid_log_cuts_there_and_drops_later_segments(
    tmp_path: Path, clock: FakeClock
) -> None:
    log = written_log(tmp_path, clock)
    second = log.segments[1]
    position, header = list(second.iter_batches(0))[2]
    image = crash_image(log, tmp_path)
    path = log_file(image, second.base_offset)
    data = bytearray(path.read_bytes())
    data[position + 70] ^= 0x40  # inside the records: only the CRC can tell
    path.write_bytes(bytes(data))
    recovered = reopen(image, clock)
    assert recovered.log_end_offset == header.base_offset
    assert [s.base_offset for s in recovered.segments] == [0, second.base_offset]
    assert offsets(read_all(recovered))[-1][1] == header.base_offset - 1
    assert not log_file(image, log.segments[2].base_offset).exists()


def test_segments_below_the_recovery_point_are_trusted(tmp_path: Path, clock: FakeClock) -> None:
    log = written_log(tmp_path, clock)
    log.flush()
    image = crash_image(log, tmp_path)
    recovered = reopen(image, clock, recovery_point=log.segments[-1].base_offset)
    assert recovered.log_end_offset == 90


@pytest.mark.parametrize("damage", ["truncate", "zero", "delete", "past_end"])
def test_damaged_index_after_clean_shutdown_is_rebuilt(
    tmp_path: Path, clock: FakeClock, damage: str
) -> None:
    log = written_log(tmp_path, clock)
    log.close()
    first = log.segments[0]
    entries = first.offset_index.entries
    assert entries >= 3
    index, time_index = first.offset_index.path, first.time_index.path
    if damage == "truncate":
        index.write_bytes(index.read_bytes()[:13])
    elif damage == "zero":
        index.write_bytes(bytes(index.stat().st_size))
    elif damage == "delete":
        index.unlink()
        time_index.unlink()
    else:
        data = bytearray(index.read_bytes())
        data[-4:] = (10**6).to_bytes(4, "big")
        index.write_bytes(bytes(data))
    reopened = reopen(log.directory, clock, clean=True)
    rebuilt = reopened.segments[0]
    assert rebuilt.offset_index.entries == entries
    assert rebuilt.time_index.max_timestamp == first.max_timestamp
    for offset in range(first.base_offset, rebuilt.next_offset):
        assert read_all(reopened, offset)[0].base_offset == offset - offset % 3


def test_crash_between_roll_steps(tmp_path: Path, clock: FakeClock) -> None:
    """Old segment's indexes not trimmed yet, new segment's .log created but its indexes
    not: both are repaired and appends continue in the new segment."""
    log = written_log(tmp_path, clock)
    end = log.log_end_offset
    image = crash_image(log, tmp_path)  # the active segment's indexes are preallocated
    log_file(image, end).touch()
    recovered = reopen(image, clock)
    assert recovered.segments[-1].base_offset == end
    assert recovered.append_as_leader(batch(1), 1).base_offset == end
    assert offsets(read_all(recovered))[-2:] == [(end - 3, end - 1), (end, end)]
    assert (image / f"{end:020d}.index").exists()


def test_stray_empty_segment_is_removed_after_clean_shutdown(tmp_path: Path, clock: FakeClock) -> None:
    log = written_log(tmp_path, clock)
    log.close()
    stray = log.directory / f"{log.segments[0].base_offset + 1:020d}.log"
    stray.touch()
    reopened = reopen(log.directory, clock, clean=True)
    assert not stray.exists()
    assert reopened.log_end_offset == 90


def test_leftover_files_are_removed(tmp_path: Path, clock: FakeClock) -> None:
    log = written_log(tmp_path, clock)
    log.close()
    for name in ("00000000000000000099.log.deleted", "x.tmp", "00000000000000000777.index"):
        (log.directory / name).write_bytes(b"junk")
    reopen(log.directory, clock, clean=True)
    assert not any(
        p.name.endswith((".deleted", ".tmp")) or p.name.startswith("000000000000000007")
        for p in log.directory.iterdir()
    )


def test_segment_type_is_reopened_as_inactive(tmp_path: Path) -> None:
    segment = LogSegment(tmp_path, 0, 4096, 1024, active=True, created_ms=0)
    assert segment.offset_index.path.stat().st_size == 1024
    segment.close()
    assert segment.offset_index.path.stat().st_size == 0


def test_segment_missing_its_tail_ends_the_log_there(tmp_path: Path, clock: FakeClock) -> None:
    """An OS crash may lose a rolled segment's unflushed tail while the next file stays."""
    log = written_log(tmp_path, clock)
    first, second = log.segments[0], log.segments[1]
    last_position, last_header = list(first.iter_batches(0))[-1]
    image = crash_image(log, tmp_path)
    with log_file(image, 0).open("r+b") as f:
        f.truncate(last_position)
    recovered = reopen(image, clock)
    assert recovered.log_end_offset == last_header.base_offset
    assert not log_file(image, second.base_offset).exists()
