"""Compaction end to end: latest value per key, tombstones, lag, ratio, concurrency, producers."""

import random
import threading
from pathlib import Path

import pytest

from brokerd.protocol.records import (
    Record,
    RecordInput,
    build_batch,
    decode_records,
    iter_batches,
    validate_batch,
)
from brokerd.storage import (
    CorruptRecordError,
    Log,
    LogConfig,
    LogManager,
    OutOfOrderSequenceError,
)
from brokerd.storage.cleaner import CLEANER_OFFSET_CHECKPOINT, LogCleaner
from brokerd.storage.cleaner_plan import dirty_ratio

from .conftest import FakeClock, commit

RETENTION = 5_000
CONFIG = LogConfig(
    cleanup_policy=("compact",),
    segment_bytes=64 * 1024,
    index_interval_bytes=1024,
    segment_index_bytes=64 * 1024,  # small preallocated indexes keep msync cheap
    delete_retention_ms=RETENTION,
)
Written = dict[int, tuple[bytes | None, bytes | None]]  # offset -> (key, value)


def open_manager(tmp_path: Path, clock: FakeClock, config: LogConfig = CONFIG) -> LogManager:
    manager = LogManager([tmp_path / "data"], config, clock=clock)
    manager.load()
    return manager


def write_updates(
    log: Log, rng: random.Random, updates: int, keys: int, now_ms: int, written: Written
) -> None:
    """``updates`` records over ``keys`` keys in batches of 100, cycling all five codecs;
    one in twenty is a tombstone. All committed (the cleaner stays below the high
    watermark)."""
    for first in range(0, updates, 100):
        items: list[RecordInput] = []
        for _ in range(min(100, updates - first)):
            value = None if rng.random() < 0.05 else b"v%d" % rng.randrange(10**9)
            items.append((b"key-%d" % rng.randrange(keys), value, [], now_ms))
        result = log.append_as_leader(build_batch(items, compression=(first // 100) % 5), 0)
        for offset, (key, value, _, _) in enumerate(items, start=result.base_offset):
            written[offset] = (key, value)
    commit(log)


def latest(written: Written) -> dict[bytes | None, tuple[int, bytes | None]]:
    """key -> (offset, value) of its last write."""
    return {key: (offset, value) for offset, (key, value) in sorted(written.items())}


def read_records(log: Log) -> list[Record]:
    """Every record a consumer reading from the log start gets (batches CRC-checked)."""
    data = log.read(log.log_start_offset, 1 << 40).read()
    records = []
    for position, header in iter_batches(data):
        validate_batch(data, position, header)
        records.extend(decode_records(data, position, header))
    return records


def assert_original_offsets(records: list[Record], written: Written) -> None:
    offsets = [record.offset for record in records]
    assert offsets == sorted(set(offsets)), "offsets must strictly increase"
    assert all(written[r.offset] == (r.key, r.value) for r in records)


def test_compaction_keeps_the_latest_value_of_every_key_then_drops_tombstones(
    tmp_path: Path, clock: FakeClock
) -> None:
    manager = open_manager(tmp_path, clock)
    log = manager.get_or_create("t", 0)
    written: Written = {}
    write_updates(log, random.Random(1), 100_000, 1000, clock.now_ms, written)
    log.roll()  # everything cleanable
    end, size = log.log_end_offset, log.size_bytes
    cleaner = LogCleaner(manager)

    assert cleaner.clean_once(clock.now_ms)
    records = read_records(log)
    assert_original_offsets(records, written)
    expected = latest(written)
    assert {r.key: (r.offset, r.value) for r in records} == expected
    assert len(records) == len(expected)  # one record per key, tombstones included
    assert log.log_end_offset == end and log.size_bytes < size / 20
    assert (tmp_path / "data" / CLEANER_OFFSET_CHECKPOINT).read_text() == f"0\n1\nt 0 {end}\n"
    assert cleaner.first_dirty_offset("t", 0) == end
    assert not cleaner.clean_once(clock.now_ms)  # nothing dirty, no horizon reached

    clock.advance(RETENTION)  # the tombstones' delete horizon: a cleaning is due
    assert cleaner.clean_once(clock.now_ms)
    records = read_records(log)
    assert_original_offsets(records, written)
    live = {key: value for key, (_, value) in expected.items() if value is not None}
    assert len(live) < len(expected)
    assert {r.key: r.value for r in records} == live and len(records) == len(live)
    data = log.read(0, 1 << 40).read()
    empty = [h for _, h in iter_batches(data) if h.records_count == 0]
    assert len(empty) < len(log.segments)  # at most each cleaned segment's last batch
    assert log.append_as_leader(build_batch([(b"k", b"v", [], clock.now_ms)]), 0).base_offset == end


def test_active_and_too_recent_segments_are_untouched(tmp_path: Path, clock: FakeClock) -> None:
    lag = 60_000
    config = CONFIG.with_overrides({"min.compaction.lag.ms": str(lag)})
    manager = open_manager(tmp_path, clock, config)
    log = manager.get_or_create("t", 0)
    written: Written = {}
    rng = random.Random(2)
    write_updates(log, rng, 10_000, 100, clock.now_ms, written)
    log.roll()
    old_end = log.log_end_offset
    clock.advance(lag + 1)
    write_updates(log, rng, 10_000, 100, clock.now_ms, written)  # recent, part in the active
    active = log.segments[-1]
    assert active.size > 0
    recent_bytes = log.read(old_end, 1 << 40).read()
    cleaner = LogCleaner(manager)

    assert cleaner.clean_once(clock.now_ms)
    assert log.read(old_end, 1 << 40).read() == recent_bytes
    assert log.segments[-1] is active
    assert cleaner.first_dirty_offset("t", 0) == old_end
    records = read_records(log)
    assert_original_offsets(records, written)
    assert {r.key: r.value for r in records} == {k: v for k, (_, v) in latest(written).items()}

    clock.advance(lag)  # now the second phase is old enough; the active one never is
    assert cleaner.clean_once(clock.now_ms)
    assert cleaner.first_dirty_offset("t", 0) == active.base_offset
    assert log.segments[-1] is active
    assert log.read(active.base_offset, 1 << 40).read() == recent_bytes[-active.size :]


def test_dirty_ratio_threshold(tmp_path: Path, clock: FakeClock) -> None:
    manager = open_manager(tmp_path, clock)
    log = manager.get_or_create("t", 0)
    written: Written = {}
    rng = random.Random(3)
    write_updates(log, rng, 20_000, 10_000, clock.now_ms, written)  # few duplicates
    log.roll()
    cleaner = LogCleaner(manager)
    assert cleaner.clean_once(clock.now_ms)  # never cleaned: all dirty, ratio 1
    write_updates(log, rng, 300, 10_000, clock.now_ms, written)
    log.roll()
    ratio = dirty_ratio(log, cleaner.first_dirty_offset("t", 0), clock.now_ms)
    assert 0 < ratio < 0.5
    assert cleaner.plan(clock.now_ms) is None
    log.update_config(CONFIG.with_overrides({"min.cleanable.dirty.ratio": str(ratio / 2)}))
    assert cleaner.clean_once(clock.now_ms)
    assert {r.key: r.value for r in read_records(log)} == {
        k: v for k, (_, v) in latest(written).items()
    }


def test_appends_and_reads_continue_while_a_cleaning_builds(
    tmp_path: Path, clock: FakeClock
) -> None:
    manager = open_manager(tmp_path, clock)
    log = manager.get_or_create("t", 0)
    written: Written = {}
    rng = random.Random(4)
    write_updates(log, rng, 30_000, 500, clock.now_ms, written)
    log.roll()
    cleaner = LogCleaner(manager)
    job = cleaner.plan(clock.now_ms)
    assert job is not None
    before = log.read(0, 1 << 40)  # a fetch in flight holds regions of the old segments
    expected_old_bytes = before.read()

    outcome = []
    builder = threading.Thread(target=lambda: outcome.append(job.build()))
    builder.start()
    write_updates(log, rng, 30_000, 500, clock.now_ms, written)  # rolls several segments
    builder.join()
    write_updates(log, rng, 1_000, 500, clock.now_ms, written)
    assert cleaner.commit(job, outcome[0])

    assert before.read() == expected_old_bytes  # old files stay readable until deleted
    records = read_records(log)
    assert_original_offsets(records, written)
    assert {r.key: r.value for r in records} == {k: v for k, (_, v) in latest(written).items()}
    assert cleaner.first_dirty_offset("t", 0) == job.plan.end_offset
    log.delete_expired_files(clock.now_ms + CONFIG.file_delete_delay_ms)
    assert not list(log.directory.glob("*.deleted")) and not list(log.directory.glob("*.cleaned"))


@pytest.mark.parametrize("change", ["truncate", "retention", "deleted"])
def test_cleaning_is_abandoned_when_the_log_changed(
    tmp_path: Path, clock: FakeClock, change: str
) -> None:
    config = CONFIG.with_overrides({"cleanup.policy": "compact,delete"})
    manager = open_manager(tmp_path, clock, config)
    log = manager.get_or_create("t", 0)
    written: Written = {}
    write_updates(log, random.Random(5), 20_000, 500, clock.now_ms, written)
    log.roll()
    cleaner = LogCleaner(manager)
    job = cleaner.plan(clock.now_ms)
    assert job is not None
    if change == "truncate":
        log.truncate_to(log.segments[1].base_offset + 5)
    elif change == "retention":
        log.update_config(config.with_overrides({"retention.bytes": str(log.size_bytes // 2)}))
        assert log.enforce_retention(clock.now_ms) > 0
    if change == "truncate":  # the build reads files that shrank under it and gives up
        with pytest.raises(CorruptRecordError):
            job.build()
        cleaner.abort(job)
    else:
        result = job.build()
        if change == "deleted":
            manager.delete("t", 0)
        assert not cleaner.commit(job, result)
    if change == "deleted":
        assert not (tmp_path / "data" / "t-0").exists()
        return
    assert not list(log.directory.glob("*.cleaned"))
    assert cleaner.first_dirty_offset("t", 0) == 0
    records = read_records(log)
    assert_original_offsets(records, written)
    assert cleaner.clean_once(clock.now_ms)  # the next round cleans the changed log


def test_idempotent_producer_state_survives_cleaning_and_reload(
    tmp_path: Path, clock: FakeClock
) -> None:
    manager = open_manager(tmp_path, clock)
    log = manager.get_or_create("t", 0)

    def produce(sequence: int, key: bytes) -> bytes:
        return build_batch(
            [(key, b"p%d" % sequence, [], clock.now_ms)],
            producer_id=9,
            producer_epoch=0,
            base_sequence=sequence,
        )

    for sequence in range(8):
        log.append_as_leader(produce(sequence, b"shared"), 0)
    last = log.producer_state(9)
    assert last is not None and last.last_offset == 7
    log.append_as_leader(build_batch([(b"shared", b"other", [], clock.now_ms)]), 0)  # supersedes
    commit(log).roll()
    cleaner = LogCleaner(manager)
    assert cleaner.clean_once(clock.now_ms)
    assert [(r.offset, r.value) for r in read_records(log)] == [(8, b"other")]
    manager.close()
    for snapshot in (tmp_path / "data" / "t-0").glob("*.snapshot"):
        snapshot.unlink()  # state must come from the batches left in the log

    reopened = open_manager(tmp_path, clock)
    log = reopened.get_or_create("t", 0)
    state = log.producer_state(9)
    assert state is not None and (state.last_seq, state.last_offset) == (7, 7)
    retry = log.append_as_leader(produce(7, b"shared"), 0)
    assert retry.duplicate and retry.base_offset == 7
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(produce(9, b"shared"), 0)
    assert log.append_as_leader(produce(8, b"shared"), 0).base_offset == 9


def test_truncation_below_the_checkpoint_makes_the_log_dirty_again(
    tmp_path: Path, clock: FakeClock
) -> None:
    manager = open_manager(tmp_path, clock)
    log = manager.get_or_create("t", 0)
    written: Written = {}
    rng = random.Random(6)
    write_updates(log, rng, 5_000, 100, clock.now_ms, written)
    log.roll()
    cleaner = LogCleaner(manager)
    assert cleaner.clean_once(clock.now_ms)
    truncate_at = log.segments[-2].base_offset  # a follower drops a divergent tail
    log.truncate_to(truncate_at)
    written = {offset: kv for offset, kv in written.items() if offset < truncate_at}
    assert cleaner.first_dirty_offset("t", 0) == 0
    write_updates(log, rng, 5_000, 100, clock.now_ms, written)
    log.roll()
    assert cleaner.clean_once(clock.now_ms)
    records = read_records(log)
    assert_original_offsets(records, written)
    assert {r.key: (r.offset, r.value) for r in records} == latest(written)
    assert len(records) == len(latest(written))


def test_cleaner_picks_the_filthiest_compacted_log_and_checkpoints_each(
    tmp_path: Path, clock: FakeClock
) -> None:
    manager = open_manager(tmp_path, clock)
    rng = random.Random(8)
    plain = LogConfig(segment_bytes=64 * 1024)
    compacted = CONFIG.with_overrides({"min.cleanable.dirty.ratio": "0.1"})
    logs = {
        "fresh": manager.get_or_create("fresh", 1, compacted),
        "dupes": manager.get_or_create("dupes", 0, compacted),
        "plain": manager.get_or_create("plain", 0, plain),
    }
    keys = {"fresh": 10_000, "dupes": 10, "plain": 10}

    def write_round(updates: dict[str, int]) -> list[tuple[str, int]]:
        for name, log in logs.items():
            write_updates(log, rng, updates[name], keys[name], clock.now_ms, {})
            log.roll()
        order = []
        while (job := cleaner.plan(clock.now_ms)) is not None:
            order.append(job.key)
            assert cleaner.commit(job, job.build())
        return order

    cleaner = LogCleaner(manager)
    assert write_round({"fresh": 3_000, "dupes": 3_000, "plain": 3_000}) == [
        ("fresh", 1),  # both never cleaned (ratio 1): the first found wins
        ("dupes", 0),
    ]
    # dupes compacted to almost nothing, so the same new bytes make it far dirtier
    assert write_round({"fresh": 1_500, "dupes": 1_500, "plain": 100}) == [
        ("dupes", 0),
        ("fresh", 1),
    ]
    ends = {name: log.log_end_offset for name, log in logs.items()}
    checkpoint = (tmp_path / "data" / CLEANER_OFFSET_CHECKPOINT).read_text()
    assert checkpoint == f"0\n2\ndupes 0 {ends['dupes']}\nfresh 1 {ends['fresh']}\n"
    manager.close()

    reopened = LogManager([tmp_path / "data"], CONFIG, clock=clock)
    reopened.load({"plain": plain})
    restarted = LogCleaner(reopened)
    assert restarted.first_dirty_offset("fresh", 1) == ends["fresh"]
    assert restarted.plan(clock.now_ms) is None


def test_a_bounded_offset_map_compacts_over_several_cleanings(
    tmp_path: Path, clock: FakeClock
) -> None:
    config = CONFIG.with_overrides({"segment.bytes": "8192", "min.cleanable.dirty.ratio": "0"})
    manager = open_manager(tmp_path, clock, config)
    log = manager.get_or_create("t", 0)
    written: Written = {}
    write_updates(log, random.Random(9), 6_000, 2_000, clock.now_ms, written)
    log.roll()
    end = log.log_end_offset
    cleaner = LogCleaner(manager, max_offset_map_keys=500)
    progress = []
    while cleaner.clean_once(clock.now_ms):
        progress.append(cleaner.first_dirty_offset("t", 0))
        records = read_records(log)
        assert_original_offsets(records, written)
        assert {r.key: r.value for r in records} == {k: v for k, (_, v) in latest(written).items()}
    assert len(progress) > 2 and progress == sorted(progress) and progress[-1] == end
    records = read_records(log)
    assert len(records) == len(latest(written))  # fully compacted in the end
