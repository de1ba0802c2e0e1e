"""Offsets committed inside a transaction (TxnOffsetCommit), held until its marker.

Kafka's rule: a transactional offset commit is appended to ``__consumer_offsets`` at once
(as a transactional batch of the producer) but becomes visible to OffsetFetch only when
the transaction coordinator's commit marker reaches that offsets partition; an abort
marker discards it.  This keeps those records per (offsets partition, producer id).  On
load the log reader resolves every transaction that has a marker and hands over the ones
still open (:meth:`ReplicaOffsetsLog.open_transactions`).  Not thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from brokerd.groups.outcome import Record
from brokerd.storage.transactions import COMMIT

R = TypeVar("R")  # a record as the caller's reader yields it


class PendingTxnOffsets:
    """(offsets partition, producer id) -> offset records awaiting the marker."""

    def __init__(self) -> None:
        self._records: dict[tuple[int, int], list[Record]] = {}

    def add(self, partition: int, producer_id: int, records: list[Record]) -> None:
        self._records.setdefault((partition, producer_id), []).extend(records)

    def complete(self, partition: int, producer_id: int, commit: bool) -> list[Record]:
        """The records a marker makes visible (none for an abort); forgets them."""
        records = self._records.pop((partition, producer_id), [])
        return records if commit else []

    def forget_partition(self, partition: int) -> None:
        for key in [key for key in self._records if key[0] == partition]:
            del self._records[key]


def resolve_transactions(entries: Iterable[tuple[int, int | None, R | None]],
                         held: dict[int, list[R]]) -> Iterator[R]:
    """A partition's records in replay order, transactions resolved by their markers.

    ``entries``: (producer id of a transactional batch or -1, marker or None, record or
    None) in log order; a marker entry (``storage.transactions.ABORT``/``COMMIT``)
    carries no record.  Yields non-transactional records in place and a committed
    transaction's records at its marker; leaves those of transactions with no marker yet
    in ``held`` (producer id -> records).  Streams: a large partition is never held.
    """
    for producer_id, marker, record in entries:
        if marker is not None:
            records = held.pop(producer_id, [])
            if marker == COMMIT:
                yield from records
        elif record is not None:
            if producer_id >= 0:
                held.setdefault(producer_id, []).append(record)
            else:
                yield record
