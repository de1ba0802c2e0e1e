"""Per-record checks of a producer's batches, naming every bad record (KIP-467; no I/O).

Kafka refuses a produce partition whole when any record is invalid, but since Produce v8
it says which: ``record_errors`` lists each bad record's index (its position in the batch,
0-based) with a message, so a client fails those records and reports the others of the
batch as collateral (librdkafka's ``_INVALID_DIFFERENT_RECORD``) instead of blaming them.
Two checks are per record, as in Kafka's ``LogValidator``:

- a compacted topic refuses a record without a key (INVALID_RECORD);
- a CreateTime topic refuses a timestamp outside
  ``[now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms]``
  (INVALID_TIMESTAMP).

Only a leader's appends are checked: a follower must not refuse what its leader accepted
because the two clocks differ.  Each record gets at most one error, the key's first.  The
partition's error code is INVALID_TIMESTAMP when any record has a bad timestamp, else
INVALID_RECORD, with Kafka's
summary message.  Indexes count records across the batches of one partition's data
(clients send one batch, for which this is exactly Kafka's numbering).

Where this differs from Kafka, deliberately: Kafka decodes every batch; decoding costs
~19 µs a record here (a core would top out near 50k records/s), so a batch is decoded only
for a compacted topic or when its header's first or max timestamp already lies outside the
window.  The future bound is therefore exact (``max_timestamp`` bounds every record), the
past bound is checked on the first record only (the header keeps no minimum): a record
older than the window behind an in-window first record is stored.  A batch flagged by its
header whose records all pass still fails, as a batch (its header is what the time index
would store).
"""

from __future__ import annotations

from dataclasses import dataclass

from brokerd.protocol import ErrorCode, ProtocolError
from brokerd.protocol.records import BatchHeader, Record, decode_records
from brokerd.storage.config import LogConfig
from brokerd.storage.errors import CorruptRecordError, InvalidRecordError, InvalidTimestampError

# Kafka shows at most this many record errors in the partition's summary message.
SUMMARY_LIMIT = 3


@dataclass(frozen=True)
class RecordError:
    """One refused record: its index in the partition's data and why."""

    batch_index: int
    error_code: ErrorCode
    message: str


def check_client_records(records: memoryview, batches: list[tuple[int, BatchHeader]],
                         config: LogConfig, now_ms: int) -> None:
    """Raise InvalidTimestampError or InvalidRecordError carrying every record error of
    ``batches`` (``(position, header)`` in ``records``); return if all records pass."""
    window = _timestamp_window(config, now_ms)
    errors: list[RecordError] = []
    first_index = 0
    for position, header in batches:
        header_out_of_window = window is not None and not all(
            window[0] <= ts <= window[1] for ts in (header.base_timestamp, header.max_timestamp))
        if config.compacts or header_out_of_window:
            found = [error for index, record in enumerate(_decode(records, position, header))
                     if (error := _problem(record, first_index + index, header, config,
                                           window)) is not None]
            if header_out_of_window and not found:
                assert window is not None
                raise InvalidTimestampError(
                    f"batch timestamps {header.base_timestamp}..{header.max_timestamp} outside "
                    f"[{window[0]}, {window[1]}] (message.timestamp.before/after.max.ms)")
            errors.extend(found)
        first_index += header.records_count
    if errors:
        raise refusal(errors)


def refusal(errors: list[RecordError]) -> InvalidRecordError | InvalidTimestampError:
    """The partition-level error for ``errors``, worded as Kafka words it."""
    pairs = tuple((error.batch_index, error.message) for error in errors)
    if any(error.error_code == ErrorCode.INVALID_TIMESTAMP for error in errors):
        timestamp = InvalidTimestampError(
            "One or more records have been rejected due to invalid timestamp")
        timestamp.record_errors = pairs
        return timestamp
    shown = ", ".join(f"RecordError(batchIndex={index}, message='{message}')"
                      for index, message in pairs[:SUMMARY_LIMIT])
    invalid = InvalidRecordError(
        f"One or more records have been rejected due to {len(pairs)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]")
    invalid.record_errors = pairs
    return invalid


def _timestamp_window(config: LogConfig, now_ms: int) -> tuple[int, int] | None:
    if config.log_append_time:
        return None  # the broker stamps the batch; the client's timestamps do not matter
    return (now_ms - config.message_timestamp_before_max_ms,
            now_ms + config.message_timestamp_after_max_ms)


def _decode(records: memoryview, position: int, header: BatchHeader) -> list[Record]:
    try:
        return decode_records(records, position, header)
    except ProtocolError as exc:
        raise CorruptRecordError(f"batch at {position}: {exc}") from exc


def _problem(record: Record, index: int, header: BatchHeader, config: LogConfig,
             window: tuple[int, int] | None) -> RecordError | None:
    if config.compacts and record.key is None:
        return RecordError(index, ErrorCode.INVALID_RECORD,
                           "Compacted topic cannot accept message without key.")
    if window is not None and not window[0] <= record.timestamp <= window[1]:
        return RecordError(
            index, ErrorCode.INVALID_TIMESTAMP,
            f"Timestamp {record.timestamp} of message with offset "
            f"{record.offset - header.base_offset} is out of range. The timestamp should be "
            f"within [{window[0]}, {window[1]}]")
    return None
