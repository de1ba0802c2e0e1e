from pathlib import Path

import pytest

from brokerd.protocol.records import BatchHeader, parse_batch_header
from brokerd.storage import InvalidProducerEpochError, OutOfOrderSequenceError
from brokerd.storage.producer_state import ProducerStateManager, last_sequence

from .conftest import batch


def header(
    producer_id: int, epoch: int, sequence: int, count: int = 2, offset: int = 0
) -> BatchHeader:
    data = batch(count, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence)
    parsed = parse_batch_header(data, 0)
    parsed.base_offset = offset
    return parsed


def test_sequence_wraps_after_int32_max() -> None:
    assert last_sequence(2**31 - 2, 3) == 1
    assert last_sequence(5, 0) == 5


def test_duplicate_of_any_of_the_last_five_batches_is_found() -> None:
    state = ProducerStateManager()
    for i in range(6):
        state.update(header(7, 0, 2 * i, offset=10 * i))
    duplicate = state.check([header(7, 0, 4)])
    assert duplicate is not None and (duplicate.first_offset, duplicate.last_offset) == (20, 21)
    with pytest.raises(OutOfOrderSequenceError):  # evicted from the cache: not recognised
        state.check([header(7, 0, 0)])


def test_in_sequence_batch_passes_and_gap_fails() -> None:
    state = ProducerStateManager()
    state.update(header(7, 0, 0))
    assert state.check([header(7, 0, 2)]) is None
    with pytest.raises(OutOfOrderSequenceError):
        state.check([header(7, 0, 3)])


def test_batches_of_one_record_set_are_checked_against_each_other() -> None:
    state = ProducerStateManager()
    state.update(header(7, 0, 0))
    assert state.check([header(7, 0, 2), header(7, 0, 4)]) is None
    with pytest.raises(OutOfOrderSequenceError):
        state.check([header(7, 0, 2), header(7, 0, 5)])


def test_epoch_rules() -> None:
    state = ProducerStateManager()
    state.update(header(7, 3, 0))
    with pytest.raises(InvalidProducerEpochError):
        state.check([header(7, 2, 2)])
    with pytest.raises(OutOfOrderSequenceError):
        state.check([header(7, 4, 2)])
    assert state.check([header(7, 4, 0)]) is None
    state.update(header(7, 4, 0, offset=50))
    entry = state.producers[7]
    assert entry.epoch == 4 and len(entry.batches) == 1


def test_unknown_producer_may_start_anywhere() -> None:
    assert ProducerStateManager().check([header(9, 0, 1234)]) is None


def test_eviction_below_log_start() -> None:
    state = ProducerStateManager()
    state.update(header(1, 0, 0, offset=0))
    state.update(header(2, 0, 0, offset=10))
    state.evict_below(5)
    assert set(state.producers) == {2}


def test_snapshot_round_trip_and_corruption(tmp_path: Path) -> None:
    state = ProducerStateManager()
    state.update(header(1, 0, 0, offset=0))
    state.update(header(1, 0, 2, offset=5))
    state.update(header(2, 9, 0, offset=9))
    path = tmp_path / "00000000000000000011.snapshot"
    state.write_snapshot(path)
    loaded = ProducerStateManager.read_snapshot(path)
    assert loaded.producers == state.producers
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError):
        ProducerStateManager.read_snapshot(path)
    path.write_bytes(bytes(data[:8]))
    with pytest.raises(ValueError):
        ProducerStateManager.read_snapshot(path)
