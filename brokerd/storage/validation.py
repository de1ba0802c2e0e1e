"""Validation of an incoming record set before anything is stored (no I/O).

A produce request's partition data is one or more RecordBatch v2 batches. All of them
are checked first, and any failure rejects the whole set, so a partial write never
happens. Checks are per batch header plus one CRC32C pass over each batch; records are
never decoded. The per-record checks (keys of compacted topics, the CreateTime window)
follow in :mod:`brokerd.storage.record_checks`, which names each bad record.
"""

from __future__ import annotations

from brokerd.protocol import ErrorCode, ProtocolError
from brokerd.protocol.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    parse_batch_header,
    validate_batch,
)
from brokerd.storage.config import LogConfig
from brokerd.storage.errors import (
    CorruptRecordError,
    InvalidRecordError,
    RecordTooLargeError,
)


def validate_record_set(
    records: memoryview, config: LogConfig, now_ms: int, from_client: bool
) -> list[tuple[int, BatchHeader]]:
    """(position, header) of every batch in ``records``, or raise a StorageError.

    ``from_client`` adds the checks Kafka applies to producer data only: at least one
    record, a dense offset delta and no control batches (those are the broker's own).
    """
    total = len(records)
    if total == 0:
        raise InvalidRecordError("empty record set")
    if total > config.segment_bytes:
        raise RecordTooLargeError(
            f"record set of {total} bytes exceeds segment.bytes={config.segment_bytes}",
            ErrorCode.RECORD_LIST_TOO_LARGE,
        )
    batches: list[tuple[int, BatchHeader]] = []
    position = 0
    while position < total:
        header = _checked_header(records, position, total)
        if header.size_in_bytes > config.max_message_bytes:
            raise RecordTooLargeError(
                f"batch of {header.size_in_bytes} bytes exceeds "
                f"max.message.bytes={config.max_message_bytes}"
            )
        if from_client:
            _check_client_batch(header)
        batches.append((position, header))
        position += header.size_in_bytes
    return batches


def _checked_header(records: memoryview, position: int, total: int) -> BatchHeader:
    if total - position < BATCH_HEADER_SIZE:
        raise CorruptRecordError(f"{total - position} trailing bytes are not a batch")
    try:
        header = parse_batch_header(records, position)
        if header.size_in_bytes < BATCH_HEADER_SIZE or position + header.size_in_bytes > total:
            raise CorruptRecordError(f"batch at {position} has a bad length")
        validate_batch(records, position, header)
    except ProtocolError as exc:
        raise CorruptRecordError(f"batch at {position}: {exc}") from exc
    return header


def _check_client_batch(header: BatchHeader) -> None:
    if header.is_control:
        raise InvalidRecordError("clients may not produce control batches")
    if header.records_count < 1 or header.last_offset_delta != header.records_count - 1:
        raise InvalidRecordError(
            f"batch of {header.records_count} records has last offset delta "
            f"{header.last_offset_delta}"
        )

