"""One log's producers and transactions: Kafka's ``ProducerStateManager`` with the
partition's transaction index, as the :class:`~brokerd.storage.log.Log` uses them.

Why apart from the log: this is the state an append is checked against and updates
(idempotent duplicates, open transactions, the last stable offset, aborted transactions
for read_committed fetches), and it has its own files and life cycle (snapshots that make
reopening cheap, rebuilt by replaying batch headers after a truncation); the log keeps the
offsets, epochs and segments.  Not thread-safe: the log's thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from brokerd.protocol.records import BatchHeader
from brokerd.storage import log_loader
from brokerd.storage.errors import InvalidProducerEpochError
from brokerd.storage.producer_state import BatchMetadata, ProducerEntry
from brokerd.storage.segments import LogSegments
from brokerd.storage.transactions import CONTROL_PREFIX_BYTES, AbortedTxn, control_type
from brokerd.storage.txn_index import PartitionTransactions


class LogProducers:
    """Producer and transaction state of one partition log."""

    def __init__(self, directory: Path, segments: LogSegments, log_start: int,
                 log_end: int) -> None:
        self.directory = directory
        self._txns = PartitionTransactions.load(directory)
        self._state = log_loader.load_producer_state(directory, segments, log_end, self._txns)
        self.forget_below(log_start, [segment.base_offset for segment in segments.snapshot()])
        # The log end as of the newest snapshot (nothing to replay for an empty log), so an
        # idle log's minute checkpoint is free.
        self._snapshot_end = log_end if log_end == log_start or log_end in (
            log_loader.snapshot_offsets(directory)) else None

    # -- queries ------------------------------------------------------------------------
    def last_stable_offset(self, high_watermark: int) -> int:
        """See :mod:`transactions`: the high watermark, lowered by open transactions."""
        return self._txns.last_stable_offset(high_watermark,
                                             self._state.open_first_offsets())

    def aborted_between(self, fetch_offset: int, upper: int) -> list[AbortedTxn]:
        return self._txns.aborted_between(fetch_offset, upper)

    def open_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of its open transaction."""
        return self._state.open_transactions()

    def producer(self, producer_id: int) -> ProducerEntry | None:
        return self._state.producers.get(producer_id)

    def last_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its newest batch."""
        return {pid: entry.last_offset for pid, entry in self._state.producers.items()}

    def duplicate_of(self, headers: Iterable[BatchHeader]) -> BatchMetadata | None:
        """The earlier append these batches repeat (an idempotent producer's retry)."""
        return self._state.check(headers)

    def check_marker(self, producer_id: int, producer_epoch: int,
                     bumped: bool = False) -> int | None:
        """A marker older than the producer's epoch is fenced (INVALID_PRODUCER_EPOCH).

        ``bumped`` (transaction version 2, KIP-890): the marker carries the epoch its
        coordinator bumped past the transaction's, so it must be newer than the producer's
        epoch here; one of the same epoch belongs to an earlier transaction and would end
        a later one (fenced), unless no transaction is open, when it repeats the marker
        that already ended its own (a coordinator retry, Kafka's KAFKA-19999): its offset is
        returned and nothing is appended.  None: append."""
        entry = self._state.producers.get(producer_id)
        if entry is None:
            return None
        if producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"marker epoch {producer_epoch} < producer {producer_id} epoch {entry.epoch}")
        if not bumped or producer_epoch > entry.epoch:
            return None
        if entry.current_txn_first_offset >= 0:
            raise InvalidProducerEpochError(
                f"marker epoch {producer_epoch} is producer {producer_id}'s current epoch: "
                "it belongs to an earlier transaction than the one open here")
        return entry.last_marker_offset

    # -- changes ------------------------------------------------------------------------
    def appended(self, data: memoryview | bytearray, headers: list[BatchHeader],
                 active_base: int) -> None:
        """Batches just stored (``data`` holds them in order) in the segment based at
        ``active_base``: sequences advance, transactions open and (markers) complete."""
        position = 0
        for header in headers:
            marker = None
            if header.is_control:
                marker = control_type(bytes(data[position:position + CONTROL_PREFIX_BYTES]))
            completed = self._state.update(header, marker)
            if completed is not None:
                self._txns.completed(completed, active_base,
                                     self._state.open_transactions().values())
            position += header.size_in_bytes

    def high_watermark_moved(self, high_watermark: int) -> None:
        self._txns.high_watermark_moved(high_watermark)

    def expire(self, now_ms: int, expiration_ms: int) -> None:
        self._state.expire(now_ms, expiration_ms)

    def forget_below(self, offset: int, segment_bases: list[int]) -> None:
        """The log start moved to ``offset``: forget what lay below it."""
        self._state.evict_below(offset)
        if self._txns.forget_below(offset):
            self._txns.rewrite(segment_bases)

    def forget_aborted(self, entries: list[AbortedTxn], segment_bases: list[int]) -> None:
        """Compaction removed all data of these aborted transactions (see
        :mod:`cleaner_txns`): a read_committed fetch need not hear of them."""
        if self._txns.forget(entries):
            self._txns.rewrite(segment_bases)

    def restart_at(self, offset: int, segments: LogSegments) -> None:
        """The log was emptied and restarts at ``offset``: nothing is remembered."""
        self._txns.forget_from(-1)
        self._txns.rewrite([offset])
        self.reload(segments, offset, lambda snapshot: False)

    def reload(self, segments: LogSegments, log_end: int,
               keep_snapshot: Callable[[int], bool]) -> None:
        """After a truncation: drop the snapshots ``keep_snapshot`` refuses, then rebuild
        the state from what is left."""
        log_loader.delete_snapshots(self.directory, keep_snapshot)
        self._snapshot_end = None
        self._state = log_loader.load_producer_state(self.directory, segments, log_end,
                                                     self._txns)

    # -- durability ---------------------------------------------------------------------
    def flush(self) -> None:
        self._txns.flush()

    def snapshot(self, log_end: int) -> None:
        """Snapshot at the log end (reopening replays only later batches)."""
        if log_end == self._snapshot_end:  # idle since: listing 6,000 dirs a minute cost most
            return
        self._snapshot_end = log_end
        log_loader.write_snapshot(self.directory, self._state, log_end)
