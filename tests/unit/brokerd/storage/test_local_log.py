"""``LocalLog`` alone: segments, roll, reads of file regions, deletion, truncation and the
flush/recovery-point handshake, with batches whose offsets are already final (no
``Log`` above it: no log start, high watermark, producers or epochs)."""

from pathlib import Path

import pytest

from brokerd.protocol.records import build_batch, iter_batches
from brokerd.storage import LogConfig, local_log
from brokerd.storage.local_log import LocalLog

from .conftest import NOW_MS, FakeClock


def open_local(tmp_path: Path, clock: FakeClock, clean: bool = True, **config: object) -> LocalLog:
    return LocalLog(tmp_path / "t-0", LogConfig(**config),  # type: ignore[arg-type]
                    clean_shutdown=clean, clock=clock)


def append(local: LocalLog, count: int = 1, base_offset: int | None = None) -> bytes:
    """Append one batch of ``count`` records at ``base_offset`` (default: the log end)."""
    base = local.log_end_offset if base_offset is None else base_offset
    data = build_batch([(b"k", b"v" * 100, [], NOW_MS)] * count, base_offset=base)
    local.append(data, [header for _, header in iter_batches(data)], local.now_ms())
    return data


def bases(local: LocalLog) -> list[int]:
    return [segment.base_offset for segment in local.segments]


def test_appends_roll_at_segment_bytes_and_read_back_as_whole_batches(
    tmp_path: Path, clock: FakeClock
) -> None:
    local = open_local(tmp_path, clock, segment_bytes=400)
    written = b"".join(append(local, 2) for _ in range(5))
    assert local.log_end_offset == 10 and bases(local) == [0, 2, 4, 6, 8]
    assert local.size_bytes == len(written)
    assert local.read(0, 10, 1 << 20, True).read() == written
    first_two = local.read(3, 6, 1 << 20, True)  # the batch holding 3, up to before 6
    assert first_two.read() == written[len(written) // 5 : 3 * len(written) // 5]
    assert local.read(0, 10, 1, True).size == len(written) // 5  # min one batch


def test_a_huge_offset_gap_rolls_to_the_lowest_base_that_fits(
    tmp_path: Path, clock: FakeClock
) -> None:
    local = open_local(tmp_path, clock)
    append(local)
    append(local, base_offset=2**31 + 100)
    assert bases(local) == [0, 2**31 + 100 - (2**31 - 1)]
    assert local.log_end_offset == 2**31 + 101


def test_delete_oldest_follows_the_predicate_never_the_active_segment(
    tmp_path: Path, clock: FakeClock
) -> None:
    local = open_local(tmp_path, clock, file_delete_delay_ms=1000)
    for _ in range(3):
        append(local)
        local.roll()
    assert local.delete_oldest(lambda segment, next_base: next_base <= 2) == 2
    assert bases(local) == [2, 3]
    assert local.delete_oldest(lambda segment, next_base: True) == 1
    assert bases(local) == [3]
    deleted = sorted(p.name for p in local.directory.iterdir() if p.suffix == ".deleted")
    assert len(deleted) == 9  # three segments' .log/.index/.timeindex wait for the delay
    local.delete_expired_files(clock.now_ms + 999)
    assert any(p.suffix == ".deleted" for p in local.directory.iterdir())
    local.delete_expired_files(clock.now_ms + 1000)
    assert not any(p.suffix == ".deleted" for p in local.directory.iterdir())


def test_truncation_lowers_the_recovery_point_and_voids_a_flush_in_flight(
    tmp_path: Path, clock: FakeClock
) -> None:
    local = open_local(tmp_path, clock)
    for _ in range(4):
        append(local, 2)
    target = local.flush()  # a worker fsynced up to 8 ...
    local.truncate_to(3)  # ... while a follower dropped a divergent tail
    local.mark_flushed(target)
    assert local.log_end_offset == 2 and local.recovery_point == 0  # 3..8 are other data now
    assert local.truncation_count == 1
    local.mark_flushed(local.flush())
    assert local.recovery_point == 2


def test_truncate_fully_restarts_an_empty_log_at_the_offset(
    tmp_path: Path, clock: FakeClock
) -> None:
    local = open_local(tmp_path, clock)
    append(local, 3)
    local.roll()
    append(local, 2)
    local.mark_flushed(local.flush())
    local.truncate_fully_and_start_at(100)
    assert bases(local) == [100] and local.log_end_offset == 100 and local.size_bytes == 0
    assert local.recovery_point == 5 and local.flush_due(clock.now_ms)  # new file not synced
    append(local)
    assert local.read(100, 101, 1 << 20, True).size > 0


def test_flush_due_by_messages_time_and_rolls(tmp_path: Path, clock: FakeClock) -> None:
    local = open_local(tmp_path, clock, flush_messages=3, flush_ms=1000)
    append(local, 2)
    assert not local.flush_due(clock.now_ms)
    assert local.flush_due(clock.now_ms + 1000)
    append(local, 1)
    assert local.flush_due(clock.now_ms)
    local.mark_flushed(local.flush())
    assert local.recovery_point == 3 and not local.flush_due(clock.now_ms + 10_000)
    append(local, 1)
    local.roll()
    assert local.flush_due(clock.now_ms)  # a rolled segment is synced whatever the policy


def test_close_then_reopen_clean_trusts_everything(tmp_path: Path, clock: FakeClock) -> None:
    local = open_local(tmp_path, clock, segment_bytes=400)
    written = b"".join(append(local, 2) for _ in range(3))
    local.close()
    reopened = open_local(tmp_path, clock, segment_bytes=400)
    assert reopened.log_end_offset == reopened.recovery_point == 6
    assert reopened.read(0, 6, 1 << 20, True).read() == written
    unclean = open_local(tmp_path / "other", clock, clean=False)
    assert unclean.log_end_offset == unclean.recovery_point == 0


def test_the_flush_makes_new_directory_entries_durable_not_the_creation(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new partition directory costs no fsync when created (the event loop creates
    thousands at once); the first flush fsyncs it and its log dir, a flush after a roll
    fsyncs it again, and a flush with nothing new fsyncs no directory."""
    synced: list[Path] = []
    monkeypatch.setattr(local_log, "fsync_directory", synced.append)
    local = open_local(tmp_path, clock)
    assert synced == []
    append(local, 2)
    local.mark_flushed(local.flush())
    assert synced == [tmp_path / "t-0", tmp_path]
    append(local, 2)
    local.mark_flushed(local.flush())
    assert synced == [tmp_path / "t-0", tmp_path]
    local.roll()
    local.mark_flushed(local.flush())
    assert synced == [tmp_path / "t-0", tmp_path, tmp_path / "t-0"]
    local.close()
    synced.clear()
    reopened = open_local(tmp_path, clock)
    reopened.mark_flushed(reopened.flush())
    assert synced == []  # an existing directory's entries were made durable before


def test_a_directory_renamed_away_before_the_flush_is_no_error(
    tmp_path: Path, clock: FakeClock
) -> None:
    local = open_local(tmp_path, clock)
    append(local, 1)
    (tmp_path / "t-0").rename(tmp_path / "t-0.deleted")
    local.mark_flushed(local.flush())
    assert local.recovery_point == 1
