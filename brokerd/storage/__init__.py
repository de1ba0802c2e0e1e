"""The partition log storage engine (Kafka's log layer): segments, indexes, recovery.

Layering inside the package, each module one file format or one job: ``index`` →
``offset_index`` / ``time_index`` → ``segment`` → ``segments`` → ``local_log`` (with
``log_loader``, ``log_reads``) → ``log`` (with ``validation``, ``producer_state``,
``leader_epoch``, ``cleaner_records``) → ``manager`` → ``cleaner`` (with
``cleaner_plan``, ``cleaner_build``).
Imports only :mod:`brokerd.protocol`; never opens sockets.
"""

from brokerd.storage.cleaner import CleaningJob, LogCleaner
from brokerd.storage.config import LogConfig
from brokerd.storage.errors import (
    CorruptRecordError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTimestampError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
    StorageError,
)
from brokerd.storage.log import Log
from brokerd.storage.manager import LogManager
from brokerd.storage.results import AppendResult, FileRegion, ReadResult

__all__ = [
    "AppendResult",
    "CleaningJob",
    "CorruptRecordError",
    "FileRegion",
    "InvalidProducerEpochError",
    "InvalidRecordError",
    "InvalidTimestampError",
    "Log",
    "LogCleaner",
    "LogConfig",
    "LogManager",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "ReadResult",
    "RecordTooLargeError",
    "StorageError",
]
