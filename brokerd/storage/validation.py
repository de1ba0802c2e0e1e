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
    record, a dense offset delta, no control batches (those are the broker's own), and
    the size limits (``segment.bytes`` for the set, ``max.message.bytes`` per batch). A
    follower stores whatever its leader accepted, whatever the limits are now (Kafka's
    ``ignoreRecordSize`` for replication, KAFKA-17375): refusing it would leave the
    follower out of the ISR for good; :func:`segment_sized_runs` splits such a set.
    """
    total = len(records)
    if total == 0:
        raise InvalidRecordError("empty record set")
    if from_client and total > config.segment_bytes:
        raise RecordTooLargeError(
            f"record set of {total} bytes exceeds segment.bytes={config.segment_bytes}",
            ErrorCode.RECORD_LIST_TOO_LARGE,
        )
    batches: list[tuple[int, BatchHeader]] = []
    position = 0
    while position < total:
        header = _checked_header(records, position, total)
        if from_client and header.size_in_bytes > config.max_message_bytes:
            raise RecordTooLargeError(
                f"batch of {header.size_in_bytes} bytes exceeds "
                f"max.message.bytes={config.max_message_bytes}"
            )
        if from_client:
            _check_client_batch(header)
        batches.append((position, header))
        position += header.size_in_bytes
    return batches


def segment_sized_runs(
    batches: list[tuple[int, BatchHeader]], segment_bytes: int
) -> list[tuple[int, int, list[BatchHeader]]]:
    """Split validated batches into runs of consecutive batches (start, end, headers)
    each at most ``segment_bytes`` long, so each run fits one segment; a batch longer
    than that on its own is a run of its own (a follower stores it in a segment of its
    own). One run when the whole set fits, the usual case."""
    runs: list[tuple[int, int, list[BatchHeader]]] = []
    for position, header in batches:
        end = position + header.size_in_bytes
        if not runs or end - runs[-1][0] > segment_bytes:
            runs.append((position, end, [header]))
        else:
            start, _, headers = runs[-1]
            headers.append(header)  # in place: a 1 MB fetch may hold thousands of batches
            runs[-1] = (start, end, headers)
    return runs


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

