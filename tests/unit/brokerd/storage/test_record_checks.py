"""Per-record checks (KIP-467): every bad record named by index, Kafka's codes and words."""

from __future__ import annotations

import pytest

from brokerd.protocol import ErrorCode
from brokerd.protocol.records import RecordInput, build_batch, parse_batch_header
from brokerd.storage import InvalidRecordError, InvalidTimestampError, LogConfig
from brokerd.storage.record_checks import check_client_records

from .conftest import NOW_MS, batch

WINDOW = {"message_timestamp_before_max_ms": 1000, "message_timestamp_after_max_ms": 10}


def check(*batches: bytes, **config: object) -> None:
    data = memoryview(b"".join(batches))
    positions, at = [], 0
    while at < len(data):
        header = parse_batch_header(data, at)
        positions.append((at, header))
        at += header.size_in_bytes
    check_client_records(data, positions, LogConfig(**config), NOW_MS)  # type: ignore[arg-type]


def records(*timestamps_and_keys: tuple[int, bytes | None]) -> bytes:
    items: list[RecordInput] = [(key, b"v", [], ts) for ts, key in timestamps_and_keys]
    return build_batch(items)


def test_timestamps_inside_the_window_pass_and_log_append_time_checks_none() -> None:
    check(bytes(batch(1, timestamp=NOW_MS - 1000)), **WINDOW)
    check(records((0, b"k")), message_timestamp_type="LogAppendTime", **WINDOW)


def test_every_record_outside_the_window_is_named() -> None:
    data = records((NOW_MS, b"a"), (NOW_MS - 5000, b"b"), (NOW_MS, b"c"), (NOW_MS + 11, b"d"))
    with pytest.raises(InvalidTimestampError) as raised:
        check(data, **WINDOW)
    error = raised.value
    assert error.error_code == ErrorCode.INVALID_TIMESTAMP
    assert str(error) == "One or more records have been rejected due to invalid timestamp"
    assert [index for index, _ in error.record_errors] == [1, 3]
    assert error.record_errors[0][1] == (
        f"Timestamp {NOW_MS - 5000} of message with offset 1 is out of range. The timestamp "
        f"should be within [{NOW_MS - 1000}, {NOW_MS + 10}]")


def test_compacted_topics_name_each_keyless_record() -> None:
    data = records((NOW_MS, b"a"), (NOW_MS, None), (NOW_MS, b"c"), (NOW_MS, None))
    with pytest.raises(InvalidRecordError) as raised:
        check(data, cleanup_policy=("compact",))
    error = raised.value
    assert error.error_code == ErrorCode.INVALID_RECORD
    assert error.record_errors == ((1, "Compacted topic cannot accept message without key."),
                                   (3, "Compacted topic cannot accept message without key."))
    assert str(error).startswith(
        "One or more records have been rejected due to 2 record errors in total, and only "
        "showing the first three errors at most: [RecordError(batchIndex=1, message=")
    check(records((NOW_MS, b"a")), cleanup_policy=("compact",))


def test_a_bad_timestamp_anywhere_makes_the_partition_error_invalid_timestamp() -> None:
    data = records((NOW_MS, None), (NOW_MS - 5000, b"b"))
    with pytest.raises(InvalidTimestampError) as raised:
        check(data, cleanup_policy=("compact",), **WINDOW)
    assert [i for i, _ in raised.value.record_errors] == [0, 1]  # key first, then timestamp


def test_indexes_run_across_the_batches_of_one_partition() -> None:
    with pytest.raises(InvalidTimestampError) as raised:
        check(records((NOW_MS, b"a"), (NOW_MS, b"b")), records((NOW_MS - 5000, b"c")), **WINDOW)
    assert [i for i, _ in raised.value.record_errors] == [2]


def test_a_header_outside_the_window_with_no_bad_record_still_fails_as_a_batch() -> None:
    data = bytearray(records((NOW_MS, b"a")))
    # max_timestamp (bytes 35..43) claims a far future; the record itself is on time.
    data[35:43] = (NOW_MS + 10**9).to_bytes(8, "big")
    with pytest.raises(InvalidTimestampError) as raised:
        check(bytes(data), **WINDOW)
    assert raised.value.record_errors == ()
