"""Errors the log raises, each mapped to the Kafka error code a handler should answer with.

A request handler catches :class:`StorageError` and copies ``error_code`` into the
partition's response; nothing here knows about requests or connections.
"""

from __future__ import annotations

from pathlib import Path

from brokerd.protocol import ErrorCode


class StorageError(Exception):
    """Base class: an append, read or admin operation on a log failed."""

    error_code: ErrorCode = ErrorCode.KAFKA_STORAGE_ERROR
    # (index, message) of each refused record (Produce v8+ ``record_errors``, KIP-467);
    # empty when the refusal is not about particular records.
    record_errors: tuple[tuple[int, str], ...] = ()

    def __init__(self, message: str, error_code: ErrorCode | None = None) -> None:
        super().__init__(message)
        if error_code is not None:
            self.error_code = error_code


class CorruptRecordError(StorageError):
    """A batch failed its magic, size or CRC32C check; nothing from the request was stored."""

    error_code = ErrorCode.CORRUPT_MESSAGE


class InvalidRecordError(StorageError):
    """A well-formed batch that the log refuses (e.g. no records, inconsistent offset delta)."""

    error_code = ErrorCode.INVALID_RECORD


class RecordTooLargeError(StorageError):
    """One batch exceeds ``max.message.bytes`` (MESSAGE_TOO_LARGE), or the whole record set
    cannot fit in one segment (RECORD_LIST_TOO_LARGE)."""

    error_code = ErrorCode.MESSAGE_TOO_LARGE


class InvalidTimestampError(StorageError):
    """A CreateTime timestamp lies outside the topic's ``message.timestamp.*.max.ms`` window."""

    error_code = ErrorCode.INVALID_TIMESTAMP


class OffsetOutOfRangeError(StorageError):
    """A read or DeleteRecords offset lies outside ``[log_start_offset, log_end_offset]``."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class OutOfOrderSequenceError(StorageError):
    """An idempotent producer skipped a sequence number (a batch was lost in flight)."""

    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(StorageError):
    """An idempotent producer wrote with an epoch older than the one the log has seen."""

    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


class LogDirFailure(StorageError):
    """Writing to a log directory failed (disk full, I/O error): the directory is offline
    from now on (Kafka's KIP-112).  Clients get KAFKA_STORAGE_ERROR and retry elsewhere."""

    def __init__(self, message: str, log_dir: Path) -> None:
        super().__init__(message)
        self.log_dir = log_dir
