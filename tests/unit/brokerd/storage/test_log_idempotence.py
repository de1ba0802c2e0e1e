from collections.abc import Callable
from pathlib import Path

import pytest

from brokerd.storage import AppendResult, InvalidProducerEpochError, Log, OutOfOrderSequenceError
from brokerd.storage.log import PRODUCER_ID_EXPIRATION_MS

from .conftest import FakeClock, batch
from .helpers import offsets, read_all

OpenLog = Callable[..., Log]


def produce(log: Log, sequence: int, epoch: int = 0, count: int = 2, pid: int = 42) -> AppendResult:
    data = batch(count, producer_id=pid, producer_epoch=epoch, base_sequence=sequence)
    return log.append_as_leader(data, leader_epoch=0)


def test_retried_batch_returns_its_original_offsets_and_is_not_stored(open_log: OpenLog) -> None:
    log = open_log()
    first = produce(log, 0)
    produce(log, 2)
    retry = produce(log, 0)
    assert retry.duplicate and (retry.base_offset, retry.last_offset) == (0, 1)
    assert not first.duplicate
    assert log.log_end_offset == 4
    assert offsets(read_all(log)) == [(0, 1), (2, 3)]


def test_sequence_gap_and_stale_epoch_are_rejected(open_log: OpenLog) -> None:
    log = open_log()
    produce(log, 0, epoch=1)
    with pytest.raises(OutOfOrderSequenceError):
        produce(log, 3, epoch=1)
    with pytest.raises(InvalidProducerEpochError):
        produce(log, 2, epoch=0)
    assert log.log_end_offset == 2


def test_epoch_bump_restarts_sequences(open_log: OpenLog) -> None:
    log = open_log()
    produce(log, 0, epoch=1)
    produce(log, 2, epoch=1)
    with pytest.raises(OutOfOrderSequenceError):
        produce(log, 4, epoch=2)
    assert produce(log, 0, epoch=2).base_offset == 4
    state = log.producer_state(42)
    assert state is not None and state.epoch == 2 and state.last_seq == 1


def test_non_idempotent_batches_are_never_deduplicated(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(batch(1), 0)
    assert not log.append_as_leader(batch(1), 0).duplicate
    assert log.log_end_offset == 2


@pytest.mark.parametrize("clean", [True, False])
def test_producer_state_survives_reopen(open_log: OpenLog, clean: bool) -> None:
    log = open_log()
    produce(log, 0)
    produce(log, 2)
    if clean:
        log.close()  # writes a snapshot at the log end
    else:
        log.flush()  # crash: no snapshot, the state is rebuilt by scanning headers
    assert any(p.suffix == ".snapshot" for p in log.directory.iterdir()) == clean
    reopened = open_log(clean_shutdown=clean)
    assert produce(reopened, 2).duplicate
    with pytest.raises(OutOfOrderSequenceError):
        produce(reopened, 5)
    assert produce(reopened, 4).base_offset == 4


def test_snapshot_plus_replay_of_later_batches(open_log: OpenLog) -> None:
    log = open_log()
    produce(log, 0)
    log.take_producer_snapshot()
    produce(log, 2, pid=43)
    produce(log, 2)
    log.flush()
    reopened = open_log(clean_shutdown=False)
    assert produce(reopened, 2).duplicate
    assert produce(reopened, 2, pid=43).duplicate


def test_idle_producers_expire(open_log: OpenLog, clock: FakeClock) -> None:
    log = open_log()
    produce(log, 0)
    log.enforce_retention(clock.now_ms + PRODUCER_ID_EXPIRATION_MS)
    assert log.producer_state(42) is not None
    log.enforce_retention(clock.now_ms + PRODUCER_ID_EXPIRATION_MS + 2)  # max ts is now + 1
    assert log.producer_state(42) is None
    assert not produce(log, 77).duplicate  # unknown again: any sequence is accepted


def test_an_idle_logs_snapshot_touches_no_file(open_log: OpenLog,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The minute checkpoint of a log nothing was appended to since its last snapshot must
    not even list its directory (thousands of idle logs per broker)."""
    from brokerd.storage import log_loader

    log = open_log()
    produce(log, 0)
    log.take_producer_snapshot()
    listings: list[Path] = []
    real = log_loader.snapshot_offsets

    def listing(directory: Path) -> list[int]:
        listings.append(directory)
        return real(directory)

    monkeypatch.setattr(log_loader, "snapshot_offsets", listing)
    log.take_producer_snapshot()
    assert listings == []
    produce(log, 2)
    log.take_producer_snapshot()
    assert listings and (log.directory / f"{4:020d}.snapshot").exists()
