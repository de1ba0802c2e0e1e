"""Compaction under transactions: an aborted write never supersedes a committed one, and
nothing at or after an open transaction is compacted (Kafka's rule: clean below the LSO)."""

from pathlib import Path

from brokerd.protocol.records import build_batch, decode_records, iter_batches
from brokerd.storage import Log
from brokerd.storage.cleaner import LogCleaner

from .conftest import NOW_MS, FakeClock, commit
from .test_cleaner import CONFIG, open_manager


def _put(log: Log, key: bytes, value: bytes, pid: int = -1, sequence: int = -1) -> None:
    batch = build_batch([(key, value, [], NOW_MS)], producer_id=pid, producer_epoch=0,
                        base_sequence=sequence, is_transactional=pid >= 0)
    log.append_as_leader(batch, 0)


def _values(log: Log) -> list[tuple[bytes | None, bytes | None]]:
    data = log.read(log.log_start_offset, 1 << 30).read()
    return [(r.key, r.value) for position, header in iter_batches(data)
            if not header.is_control for r in decode_records(data, position, header)]


def _clean(log_cleaner: LogCleaner, clock: FakeClock) -> None:
    while (job := log_cleaner.plan(clock.now_ms)) is not None:
        assert log_cleaner.commit(job, job.build())


def test_an_aborted_write_never_replaces_the_committed_value(tmp_path: Path,
                                                             clock: FakeClock) -> None:
    manager = open_manager(tmp_path, clock)
    log = manager.get_or_create("t", 0, CONFIG)
    _put(log, b"k", b"committed")
    _put(log, b"k", b"aborted", pid=7, sequence=0)
    log.append_marker(7, 0, commit=False, coordinator_epoch=0, leader_epoch=0)
    _put(log, b"other", b"x")
    commit(log)
    log.roll()
    commit(log)
    _clean(LogCleaner(manager), clock)
    assert _values(log) == [(b"k", b"committed"), (b"other", b"x")]


def test_nothing_from_an_open_transaction_on_is_compacted(tmp_path: Path,
                                                          clock: FakeClock) -> None:
    manager = open_manager(tmp_path, clock)
    log = manager.get_or_create("t", 0, CONFIG)
    _put(log, b"k", b"old")
    log.roll()
    _put(log, b"k", b"open", pid=7, sequence=0)  # may still be aborted
    log.roll()
    _put(log, b"k", b"newer")
    log.roll()
    commit(log)
    assert log.last_stable_offset == 1
    _clean(LogCleaner(manager), clock)
    assert _values(log) == [(b"k", b"old"), (b"k", b"open"), (b"k", b"newer")]
    log.append_marker(7, 0, commit=True, coordinator_epoch=0, leader_epoch=0)
    log.roll()
    commit(log)
    _clean(LogCleaner(manager), clock)
    assert _values(log) == [(b"k", b"newer")]
