import os
from collections.abc import Callable

import pytest

from brokerd.protocol.records import iter_batches, parse_batch_header, patch_base_offset
from brokerd.storage import Log, LogConfig, OffsetOutOfRangeError

from .conftest import NOW_MS, FakeClock, batch
from .helpers import offsets, read_all

OpenLog = Callable[..., Log]


def test_offsets_are_assigned_and_only_the_header_is_patched(open_log: OpenLog) -> None:
    log = open_log()
    original = bytes(batch(3))
    assert log.append_as_leader(memoryview(original), leader_epoch=5).base_offset == 0
    result = log.append_as_leader(memoryview(original), leader_epoch=5)
    assert (result.base_offset, result.last_offset, result.log_append_time) == (3, 5, -1)
    stored = log.read(3, 1 << 20).read()
    assert parse_batch_header(stored, 0).base_offset == 3
    assert parse_batch_header(stored, 0).partition_leader_epoch == 5
    assert stored[8:12] == original[8:12] and stored[16:] == original[16:]
    assert log.log_end_offset == 6
    assert log.leader_epoch_cache.entries == [(5, 0)]


def test_a_writable_record_set_is_patched_in_place_and_stored_from_there(
    open_log: OpenLog,
) -> None:
    log = open_log()
    log.append_as_leader(batch(2), 0)
    received = bytearray(batch(3))  # as the connection hands over a small produce frame
    log.append_as_leader(memoryview(received), leader_epoch=7)
    header = parse_batch_header(received, 0)
    assert (header.base_offset, header.partition_leader_epoch) == (2, 7)  # no private copy
    assert log.read(2, 1 << 20).read() == received
    read_only = bytes(batch(1))
    log.append_as_leader(read_only, 7)
    assert read_only == bytes(batch(1))  # a read-only buffer is copied, never written


def test_only_the_owner_moves_the_high_watermark_within_the_offsets(open_log: OpenLog) -> None:
    log = open_log()
    for _ in range(4):
        log.append_as_leader(batch(1), 0)
    assert log.high_watermark == 0  # appending commits nothing
    log.high_watermark = 10
    assert log.high_watermark == 4  # clamped to the log end
    assert log.read(0, 1 << 20, max_offset=2).size == 2 * len(batch(1))
    log.truncate_to(3)
    assert log.high_watermark == 3  # a truncated tail takes the high watermark with it
    log.delete_records_before(2)
    log.high_watermark = 0
    assert log.high_watermark == 2  # never below the log start


def test_a_record_set_of_several_batches_gets_consecutive_offsets(open_log: OpenLog) -> None:
    log = open_log()
    result = log.append_as_leader(memoryview(bytes(batch(2)) + bytes(batch(4))), 0)
    assert (result.base_offset, result.last_offset) == (0, 5)
    assert offsets(read_all(log)) == [(0, 1), (2, 5)]


def test_log_append_time_is_stamped_into_the_batch(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log(message_timestamp_type="LogAppendTime")
    clock.advance(777)
    result = log.append_as_leader(batch(2, timestamp=5), 0)
    assert result.log_append_time == NOW_MS + 777
    (header,) = read_all(log)
    assert header.max_timestamp == NOW_MS + 777 and header.timestamp_type == 1


def test_invalid_record_set_stores_nothing(open_log: OpenLog) -> None:
    log = open_log()
    good, bad = bytes(batch(1)), bytearray(batch(1))
    bad[-1] ^= 1
    with pytest.raises(Exception, match="CRC"):
        log.append_as_leader(memoryview(good + bytes(bad)), 0)
    assert log.log_end_offset == 0 and log.size_bytes == 0


def fill(log: Log, batches: int, count: int = 1, value_size: int = 100) -> int:
    for _ in range(batches):
        log.append_as_leader(batch(count, value_size), 0)
    return len(batch(count, value_size))


def test_read_boundaries(open_log: OpenLog) -> None:
    log = open_log()
    size = fill(log, 5, count=2)  # batches at offsets 0-1, 2-3, ..., 8-9
    assert log.read(0, 2 * size).size == 2 * size
    assert log.read(0, 2 * size - 1).size == size
    assert log.read(0, 1).size == size  # min_one_batch
    assert log.read(0, 1, min_one_batch=False).regions == []
    assert offsets(read_all(log, 3)) == [(2, 3), (4, 5), (6, 7), (8, 9)]  # holding batch
    with_bound = log.read(0, 1 << 20, max_offset=5).read()
    assert len(with_bound) == 2 * size  # 4-5 reaches the bound and is excluded
    assert log.read(4, 1 << 20, max_offset=4).regions == []
    assert log.read(10, 1 << 20).regions == []
    with pytest.raises(OffsetOutOfRangeError):
        log.read(11, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)


def test_read_crosses_segments_with_one_region_each(open_log: OpenLog) -> None:
    log = open_log()
    fill(log, 3)
    log.roll()
    fill(log, 3)
    result = log.read(1, 1 << 20)
    opened = [os.readlink(f"/proc/self/fd/{region.file}") for region in result.regions]
    assert opened == [str(s.log_path) for s in log.segments]
    assert offsets(read_all(log, 1)) == [(i, i) for i in range(1, 6)]


def test_roll_by_size_time_and_full_index(open_log: OpenLog, clock: FakeClock) -> None:
    size = len(batch(1, 100))
    log = open_log(segment_bytes=3 * size)
    fill(log, 7)
    assert [s.base_offset for s in log.segments] == [0, 3, 6]
    assert log.segments[0].log_path.name == "00000000000000000000.log"
    assert log.segments[1].log_path.name == "00000000000000000003.log"
    log.close()

    log = open_log(segment_ms=1000)
    clock.advance(1001)
    fill(log, 1)
    assert [s.base_offset for s in log.segments] == [0, 3, 6, 7]
    log.close()

    # 24 bytes = two time-index slots, one kept for sealing: the second batch of a segment
    # (the first one indexed) fills it, so a new segment holds two batches; segment 7 was
    # sealed at close, its one entry already fills it, so the first append rolls.
    log = open_log(segment_index_bytes=24, index_interval_bytes=0)
    fill(log, 4)
    assert [s.base_offset for s in log.segments] == [0, 3, 6, 7, 8, 10]
    assert offsets(read_all(log)) == [(i, i) for i in range(12)]


def test_roll_of_an_empty_segment_is_a_no_op(open_log: OpenLog) -> None:
    log = open_log()
    log.roll()
    assert [s.base_offset for s in log.segments] == [0]


def test_sparse_index_lookup_lands_on_the_right_batch(open_log: OpenLog) -> None:
    log = open_log(index_interval_bytes=1000)
    fill(log, 200, count=3, value_size=50)
    segment = log.segments[0]
    assert 10 < segment.offset_index.entries < 200
    for offset in (0, 1, 299, 300, 301, 599):
        assert read_all(log, offset)[0].base_offset == offset - offset % 3


def test_offset_for_timestamp(open_log: OpenLog) -> None:
    log = open_log(index_interval_bytes=0)
    for i in range(10):
        log.append_as_leader(batch(2, timestamp=NOW_MS + 10 * i), 0)  # max ts = +10i+1
        if i == 4:
            log.roll()
    assert log.offset_for_timestamp(0) == (0, NOW_MS + 1)
    assert log.offset_for_timestamp(NOW_MS + 41) == (8, NOW_MS + 41)
    assert log.offset_for_timestamp(NOW_MS + 42) == (10, NOW_MS + 51)
    assert log.offset_for_timestamp(NOW_MS + 91) == (18, NOW_MS + 91)
    assert log.offset_for_timestamp(NOW_MS + 92) is None


def test_follower_append_keeps_leader_offsets_and_epochs(open_log: OpenLog) -> None:
    leader = open_log()
    leader.append_as_leader(batch(2), leader_epoch=3)
    leader.append_as_leader(batch(1), leader_epoch=4)
    data = leader.read(0, 1 << 20).read()
    leader.close()
    follower_dir_log = Log(
        leader.directory.with_name("t-1"), leader.config, clean_shutdown=True
    )
    follower_dir_log.append_as_follower(memoryview(data))
    assert offsets(read_all(follower_dir_log)) == [(0, 1), (2, 2)]
    assert follower_dir_log.leader_epoch_cache.entries == [(3, 0), (4, 2)]
    with pytest.raises(Exception, match="expected 3"):
        follower_dir_log.append_as_follower(memoryview(data))


def test_follower_stores_what_the_leader_accepted_whatever_the_size_limits(
    open_log: OpenLog,
) -> None:
    """A fetched record set longer than segment.bytes is spread over segments, and a
    batch longer than segment.bytes and max.message.bytes (accepted before the limits
    were lowered) gets a segment of its own: refusing either would keep the follower
    out of the ISR for good (KAFKA-17375)."""
    leader = open_log()
    for count in (3, 3, 40, 2):
        leader.append_as_leader(batch(count, value_size=100), leader_epoch=1)
    data = leader.read(0, 1 << 20).read()
    sizes = [header.size_in_bytes for _, header in iter_batches(data)]
    leader.close()
    limit = sizes[0] + sizes[1]  # the first two batches fit one segment; the third fits none
    assert sizes[2] > limit
    follower = Log(leader.directory.with_name("t-1"),
                   LogConfig(segment_bytes=limit, max_message_bytes=sizes[0]),
                   clean_shutdown=True)
    follower.append_as_follower(memoryview(data))
    assert [s.base_offset for s in follower.segments] == [0, 6, 46]
    assert offsets(read_all(follower)) == [(0, 2), (3, 5), (6, 45), (46, 47)]
    assert follower.log_end_offset == 48


def test_max_timestamp_offset(open_log: OpenLog) -> None:
    log = open_log()
    assert log.max_timestamp_offset() is None
    for timestamp in (NOW_MS, NOW_MS + 50, NOW_MS + 10):
        log.append_as_leader(batch(2, timestamp=timestamp), 0)
        log.roll()
    log.append_as_leader(batch(1, timestamp=NOW_MS + 51), 0)  # ties the maximum later
    assert log.max_timestamp_offset() == (2, NOW_MS + 51)


def test_follower_may_skip_offsets_and_rolls_when_they_overflow_the_segment(
    open_log: OpenLog,
) -> None:
    log = open_log()
    for base_offset in (10, 2**31 + 5):
        data = bytearray(batch(2))
        patch_base_offset(data, 0, base_offset)
        log.append_as_follower(memoryview(data))
    assert [s.base_offset for s in log.segments] == [0, 12]  # contiguous: starts at log end
    assert offsets(read_all(log, 0)) == [(10, 11), (2**31 + 5, 2**31 + 6)]
    assert log.log_end_offset == 2**31 + 7


def test_a_read_of_the_newest_batch_follows_appends_and_truncations(open_log: OpenLog) -> None:
    # The segment answers a read at its last batch from memory: it must move with every
    # append and truncation, or a follower would be handed stale or vanished bytes.
    log = open_log()
    for size in (2, 3, 1):
        log.append_as_leader(batch(size), 0)
    assert offsets(read_all(log, 5)) == [(5, 5)]
    assert offsets(read_all(log, 3)) == [(2, 4), (5, 5)]
    log.truncate_to(5)
    assert offsets(read_all(log, 4)) == [(2, 4)]
    log.truncate_to(2)
    log.append_as_leader(batch(4), 0)
    assert offsets(read_all(log, 3)) == [(2, 5)]


def test_reads_of_the_newest_batches_match_the_file_whatever_the_limits(
    open_log: OpenLog,
) -> None:
    """A segment walks its newest batches from memory (``LogSegment._recent``); every read
    must return what reading the headers back from the file returns, also past the ones
    it remembers, under size and offset limits, and after a truncation."""
    log = open_log()
    for count in [1, 3, 2, 1, 4, 1, 2, 2, 1, 3, 1, 2]:
        log.append_as_leader(batch(count), 0)
    segment = log._local.segments.first

    def reads() -> list[bytes]:
        end = log.log_end_offset
        return [log.read(offset, max_bytes, max_offset=upper).read()
                for offset in range(end)
                for max_bytes in (1, 2 * len(batch(2)), 1 << 20)
                for upper in (offset + 1, offset + 4, end)]

    from_memory = reads()
    remembered = list(segment._recent)
    segment._recent.clear()
    assert reads() == from_memory
    segment._recent.extend(remembered)
    log.truncate_to(15)
    assert log.log_end_offset < 23
    from_memory = reads()
    segment._recent.clear()
    assert reads() == from_memory
