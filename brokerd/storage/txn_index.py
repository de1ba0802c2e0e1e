"""``PartitionTransactions``: a partition's aborted-transaction index and the transactions
that bound its last stable offset (the rules are in :mod:`transactions`).

On disk, Kafka's layout: one ``<segment base>.txnindex`` per segment holding the abort
markers of that segment (entries of :class:`~brokerd.storage.transactions.AbortedTxn`,
in marker order).  Appends are not fsynced one by one: :meth:`flush` runs with the log's
flush, and after a crash the index is rebuilt from the last producer-state snapshot on,
the same replay that rebuilds open transactions (:func:`log_loader.load_producer_state`),
so an entry lost with the page cache comes back.  Entries are keyed by offsets, not by
the file they sit in: every ``.txnindex`` in the directory is read at load (a cleaner
swap or retention may have left one of a removed segment), and :meth:`rewrite` then puts
each entry back in the file of the segment that holds its marker.

Thread-safety: loop thread only, except :meth:`flush` (an fsync of files only appended
to), which the log's flush runs in a worker thread.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Collection, Iterable
from pathlib import Path

from brokerd.storage.checkpoint import write_atomically
from brokerd.storage.transactions import (
    AbortedTxn,
    CompletedTxn,
    decode_entries,
    last_stable_offset,
    overlapping,
)

TXN_INDEX_SUFFIX = ".txnindex"


def _index_path(directory: Path, segment_base: int) -> Path:
    return directory / f"{segment_base:020d}{TXN_INDEX_SUFFIX}"


class PartitionTransactions:
    """Aborted transactions (persisted) and completed-but-unreplicated ones (memory)."""

    def __init__(self, directory: Path, aborted: list[AbortedTxn]) -> None:
        self.directory = directory
        self.aborted = sorted(aborted, key=lambda entry: entry.last_offset)
        # Completed transactions whose marker may not be on every in-sync replica yet.
        self._unreplicated: list[CompletedTxn] = []
        self._dirty: set[Path] = set()

    @classmethod
    def load(cls, directory: Path) -> PartitionTransactions:
        entries: list[AbortedTxn] = []
        for path in sorted(directory.glob("*" + TXN_INDEX_SUFFIX)):
            entries.extend(decode_entries(path.read_bytes()))
        return cls(directory, entries)

    # -- changes ------------------------------------------------------------------------
    def completed(self, txn: CompletedTxn, segment_base: int, open_first_offsets: Iterable[int],
                  persist: bool = True) -> None:
        """A marker was stored; an abort becomes an index entry (appended to the file of
        ``segment_base`` unless ``persist`` is False: a load rewrites the files itself)."""
        self._unreplicated.append(txn)
        if not txn.is_aborted:
            return
        stable = min(open_first_offsets, default=txn.last_offset + 1)
        entry = AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, stable)
        self.aborted.append(entry)
        if persist:
            path = _index_path(self.directory, segment_base)
            with path.open("ab") as file:
                file.write(entry.encode())
            self._dirty.add(path)

    def forget_from(self, offset: int) -> bool:
        """Drop what lies at or above ``offset`` (truncation, or before a replay from
        there); True if any aborted entry went."""
        self._unreplicated = [t for t in self._unreplicated if t.last_offset < offset]
        kept = [entry for entry in self.aborted if entry.last_offset < offset]
        changed = len(kept) != len(self.aborted)
        self.aborted = kept
        return changed

    def forget_below(self, log_start_offset: int) -> bool:
        """Drop entries whose transaction lies wholly below the log start."""
        kept = [entry for entry in self.aborted if entry.last_offset >= log_start_offset]
        changed = len(kept) != len(self.aborted)
        self.aborted = kept
        return changed

    def forget(self, entries: list[AbortedTxn]) -> bool:
        """Drop these entries (compaction removed their data); True if any went."""
        gone = set(entries)
        kept = [entry for entry in self.aborted if entry not in gone]
        changed = len(kept) != len(self.aborted)
        self.aborted = kept
        return changed

    def rewrite(self, segment_bases: list[int]) -> None:
        """Write each entry into the file of the segment holding its marker; remove the
        files of every other segment."""
        grouped: dict[int, list[AbortedTxn]] = {}
        for entry in self.aborted:
            at = bisect.bisect_right(segment_bases, entry.last_offset) - 1
            grouped.setdefault(segment_bases[max(at, 0)], []).append(entry)
        for path in self.directory.glob("*" + TXN_INDEX_SUFFIX):
            if int(path.name.removesuffix(TXN_INDEX_SUFFIX)) not in grouped:
                path.unlink(missing_ok=True)
        for base, entries in grouped.items():
            write_atomically(_index_path(self.directory, base),
                             b"".join(entry.encode() for entry in entries))
        self._dirty.clear()

    def flush(self) -> None:
        dirty, self._dirty = self._dirty, set()
        for path in dirty:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def high_watermark_moved(self, high_watermark: int) -> None:
        """Forget completions the in-sync replicas now hold (cheap when there are none)."""
        if self._unreplicated and self._unreplicated[0].last_offset < high_watermark:
            self._unreplicated = [t for t in self._unreplicated
                                  if t.last_offset >= high_watermark]

    # -- queries ------------------------------------------------------------------------
    def last_stable_offset(self, high_watermark: int, open_first_offsets: Collection[int]
                           ) -> int:
        """See :func:`transactions.last_stable_offset` (every fetch answer asks, and most
        partitions have no transaction in flight)."""
        self.high_watermark_moved(high_watermark)
        if not open_first_offsets and not self._unreplicated:
            return high_watermark
        unstable = [*open_first_offsets, *(t.first_offset for t in self._unreplicated)]
        return last_stable_offset(high_watermark, unstable)

    def aborted_between(self, fetch_offset: int, upper: int) -> list[AbortedTxn]:
        return overlapping(self.aborted, fetch_offset, upper)
