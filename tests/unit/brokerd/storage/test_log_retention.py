from collections.abc import Callable

import pytest

from brokerd.storage import Log, OffsetOutOfRangeError

from .conftest import NOW_MS, FakeClock, batch, commit
from .helpers import offsets, read_all

OpenLog = Callable[..., Log]
HOUR = 3600 * 1000


def segmented(open_log: OpenLog, timestamps: list[int], **config: object) -> Log:
    """One single-record segment per timestamp (then an empty active segment), all
    committed."""
    log = open_log(**config)
    for timestamp in timestamps:
        log.append_as_leader(batch(1, timestamp=timestamp), 0)
        log.roll()
    return commit(log)


def bases(log: Log) -> list[int]:
    return [segment.base_offset for segment in log.segments]


def test_retention_by_time_deletes_old_segments_but_never_the_active_one(
    open_log: OpenLog, clock: FakeClock
) -> None:
    log = segmented(open_log, [NOW_MS - 3 * HOUR, NOW_MS - 2 * HOUR, NOW_MS], retention_ms=HOUR)
    assert log.enforce_retention(NOW_MS) == 2
    assert bases(log) == [2, 3] and log.log_start_offset == 2
    assert offsets(read_all(log)) == [(2, 2)]
    clock.advance(10 * HOUR)
    assert log.enforce_retention(clock.now_ms) == 1
    assert bases(log) == [3] and log.log_start_offset == 3


def test_deleted_files_linger_for_the_delete_delay(open_log: OpenLog, clock: FakeClock) -> None:
    log = segmented(open_log, [0, NOW_MS], retention_ms=HOUR, file_delete_delay_ms=1000)
    region = log.read(0, 1 << 20).regions[0]
    log.enforce_retention(NOW_MS)
    names = sorted(p.name for p in log.directory.iterdir())
    assert "00000000000000000000.log.deleted" in names
    assert "00000000000000000000.log" not in names
    assert len(region.read()) == region.nbytes  # an in-flight response can still send it
    log.delete_expired_files(NOW_MS + 999)
    assert (log.directory / "00000000000000000000.log.deleted").exists()
    log.delete_expired_files(NOW_MS + 1000)
    assert not any(p.name.endswith(".deleted") for p in log.directory.iterdir())


def test_retention_by_size_keeps_at_least_retention_bytes(open_log: OpenLog) -> None:
    size = len(batch(1))
    log = segmented(open_log, [NOW_MS] * 5, retention_bytes=2 * size + 1)
    assert log.enforce_retention(NOW_MS) == 2
    assert bases(log) == [2, 3, 4, 5]
    assert log.size_bytes == 3 * size


def test_compact_only_topics_are_not_deleted_by_time(open_log: OpenLog) -> None:
    log = segmented(open_log, [0, 0], retention_ms=1, cleanup_policy=("compact",))
    assert log.enforce_retention(NOW_MS) == 0


def test_nothing_above_the_high_watermark_is_deleted(open_log: OpenLog) -> None:
    log = segmented(open_log, [0, 0, 0], retention_ms=1)
    log.high_watermark = 1
    assert log.enforce_retention(NOW_MS) == 1
    assert bases(log) == [1, 2, 3]


def test_delete_records_moves_log_start_and_drops_whole_segments(open_log: OpenLog) -> None:
    log = segmented(open_log, [NOW_MS] * 3)
    assert log.delete_records_before(1) == 1
    assert bases(log) == [1, 2, 3]
    assert log.delete_records_before(0) == 1  # never moves backwards
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(4)
    assert log.delete_records_before(-1) == 3  # -1 = the high watermark
    assert bases(log) == [3]
    assert log.read(3, 100).regions == []


def test_delete_records_inside_a_segment_hides_but_keeps_it(open_log: OpenLog) -> None:
    log = open_log()
    for _ in range(4):
        log.append_as_leader(batch(2), 0)
    assert commit(log).delete_records_before(3) == 3
    assert bases(log) == [0]
    assert offsets(read_all(log)) == [(2, 3), (4, 5), (6, 7)]  # the batch holding 3


def test_truncate_to_drops_the_tail_including_a_straddling_batch(open_log: OpenLog) -> None:
    log = open_log()
    for epoch in range(3):
        log.append_as_leader(batch(2), epoch)
        log.roll()
    log.append_as_leader(batch(2), 3)
    log.truncate_to(3)
    assert log.log_end_offset == 2 and bases(log) == [0, 2]
    assert log.leader_epoch_cache.entries == [(0, 0)]  # epoch 1's only batch is gone
    assert offsets(read_all(log)) == [(0, 1)]
    assert log.append_as_leader(batch(1), 4).base_offset == 2
    assert log.leader_epoch_cache.entries == [(0, 0), (4, 2)]
    assert offsets(read_all(log)) == [(0, 1), (2, 2)]


def test_truncate_below_log_start_restarts_the_log(open_log: OpenLog) -> None:
    log = segmented(open_log, [NOW_MS] * 3)
    log.delete_records_before(2)
    log.truncate_to(1)
    assert bases(log) == [1] and log.log_start_offset == log.log_end_offset == 1
    assert log.append_as_leader(batch(1), 0).base_offset == 1
