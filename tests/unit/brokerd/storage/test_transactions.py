"""Pure transaction rules: control records, index entries, LSO math, fetch overlap."""

from __future__ import annotations

from brokerd.protocol.records import build_batch, decode_records, parse_batch_header
from brokerd.storage.transactions import (
    ABORT,
    COMMIT,
    AbortedTxn,
    control_type,
    decode_entries,
    last_stable_offset,
    marker_batch,
    overlapping,
)


def test_marker_batch_is_a_transactional_control_batch_with_kafkas_record_layout() -> None:
    data = marker_batch(7, 3, commit=True, coordinator_epoch=5, timestamp_ms=1000)
    header = parse_batch_header(data, 0)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.records_count) == (7, 3, 1)
    (record,) = decode_records(data, 0, header)
    assert record.key == b"\x00\x00\x00\x01"  # version 0, COMMIT
    assert record.value == b"\x00\x00\x00\x00\x00\x05"  # version 0, coordinator epoch 5
    assert control_type(data) == COMMIT
    assert control_type(marker_batch(7, 3, False, 0, 1000)) == ABORT


def test_control_type_refuses_what_is_not_a_marker() -> None:
    assert control_type(build_batch([(b"\x00\x00\x00\x07", b"", [], 0)], is_control=True)) is None
    assert control_type(build_batch([(None, b"v", [], 0)], is_control=True)) is None
    assert control_type(b"\x00" * 10) is None


def test_index_entries_round_trip_and_a_torn_tail_is_ignored() -> None:
    entries = [AbortedTxn(1, 0, 9, 10), AbortedTxn(2, 5, 20, 21)]
    data = b"".join(entry.encode() for entry in entries)
    assert len(data) == 68
    assert decode_entries(data) == entries
    assert decode_entries(data + data[:20]) == entries


def test_last_stable_offset_is_the_high_watermark_lowered_by_open_transactions() -> None:
    assert last_stable_offset(100, []) == 100
    assert last_stable_offset(100, [40, 70]) == 40
    assert last_stable_offset(30, [40]) == 30  # never above the high watermark


def test_a_fetch_reports_the_aborted_transactions_overlapping_its_range() -> None:
    entries = [AbortedTxn(1, 0, 9, 10), AbortedTxn(2, 12, 20, 21), AbortedTxn(3, 5, 30, 31)]
    assert overlapping(entries, 10, 15) == [entries[2], entries[1]]  # by first offset
    assert overlapping(entries, 0, 5) == [entries[0]]
    assert overlapping(entries, 31, 50) == []
