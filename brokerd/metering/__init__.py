"""Usage metering: pure accumulation of what each tenant uses, and the ``__usage`` records.

Sits between ``quota/`` and ``server/``: it imports nothing from the broker and does no
network I/O, so every rule (windows, keys, sequences, storage samples) is a millisecond unit
test.  ``brokerd.server.metering`` feeds it from the handlers and appends its records.
"""

from brokerd.metering.pending import load_pending, save_pending
from brokerd.metering.sequences import SequenceBook, load_sequence_book, save_sequence_book
from brokerd.metering.usage import (
    HOUR_MS,
    WINDOW_MS,
    TrafficKey,
    UsageAccumulator,
    UsageRecord,
    window_start,
)

__all__ = ["HOUR_MS", "WINDOW_MS", "SequenceBook", "TrafficKey", "UsageAccumulator",
           "UsageRecord", "load_pending", "load_sequence_book", "save_pending",
           "save_sequence_book", "window_start"]
