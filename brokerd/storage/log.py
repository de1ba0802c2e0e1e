"""``Log``: one partition's log as the broker sees it (Kafka's ``UnifiedLog``): offsets,
append validation, producer state, leader epochs and the high watermark, on top of a
:class:`~brokerd.storage.local_log.LocalLog` that owns the segments.

Directory contents of its own, beside the segments: producer-state snapshots
(``<offset>.snapshot``, rebuilt from the segments if lost) and ``leader-epoch-checkpoint``
(:mod:`leader_epoch`).

Offsets: ``log_start_offset <= high_watermark <= log_end_offset``; reads are allowed in
``[log_start_offset, log_end_offset]`` and only return batches below the caller's bound
(the high watermark for consumers). The high watermark is moved only by the log's owner
(the replication ``Partition``, which knows what the in-sync replicas hold) through its
setter; the log itself only keeps it inside the bounds: truncation lowers it with the
log end and the log start raises it. The log never deletes data above it. Recovery
after a crash starts at the ``recovery_point`` (see :mod:`local_log`).

Thread-safety: every method must be called from one thread (the broker's event loop),
except :meth:`flush`, which is designed to run in a worker thread concurrently with
appends and reads (the segment side is :class:`LocalLog`'s; the epoch checkpoint's
writes are thread-safe, see :mod:`leader_epoch`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from brokerd.protocol.records import BatchHeader
from brokerd.storage import leader_stamps, log_loader, log_reads
from brokerd.storage.checkpoint import LEADER_EPOCH_CHECKPOINT
from brokerd.storage.config import LogConfig
from brokerd.storage.errors import InvalidRecordError, OffsetOutOfRangeError
from brokerd.storage.leader_epoch import LeaderEpochCache
from brokerd.storage.local_log import LocalLog
from brokerd.storage.log_producers import LogProducers
from brokerd.storage.producer_state import ProducerEntry
from brokerd.storage.record_checks import check_client_records
from brokerd.storage.results import AppendResult, ReadResult
from brokerd.storage.retention import beyond_size
from brokerd.storage.segment import LogSegment
from brokerd.storage.transactions import AbortedTxn
from brokerd.storage.validation import segment_sized_runs, validate_record_set

# Kafka's broker default producer.id.expiration.ms: an idempotent producer silent for a
# day is forgotten, bounding the state kept for producers that went away.
PRODUCER_ID_EXPIRATION_MS = 24 * 3600 * 1000


class Log:
    """A partition log; see the module docstring for invariants and thread-safety."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        high_watermark: int = 0,
        clean_shutdown: bool = False,
        clock: Callable[[], float] = time.time,
        producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS,
        on_unflushed: Callable[[], None] = lambda: None,
    ) -> None:
        """``high_watermark``: the checkpointed value, clamped into the loaded offsets;
        ``on_unflushed``: called after each append or roll (see :mod:`local_log`)."""
        self.directory = directory
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._local = LocalLog(directory, config, recovery_point=recovery_point,
                               clean_shutdown=clean_shutdown, initial_offset=log_start_offset,
                               clock=clock, on_unflushed=on_unflushed)
        segments, end = self._local.segments, self.log_end_offset
        self._log_start = min(max(log_start_offset, segments.first.base_offset), end)
        self._high_watermark = min(max(high_watermark, self._log_start), end)
        self.leader_epoch_cache = LeaderEpochCache(directory / LEADER_EPOCH_CHECKPOINT)
        self.leader_epoch_cache.truncate_from_end(end)
        if not clean_shutdown:  # the checkpoint may lag the log (see leader_epoch)
            log_loader.restore_leader_epochs(
                self.leader_epoch_cache, segments, self._local.recovery_point
            )
        self.leader_epoch_cache.truncate_from_start(self._log_start)
        self._producers = LogProducers(directory, segments, self._log_start, end)
        if not clean_shutdown:
            self.flush()  # recovered data is now durable: the next crash starts from here

    # -- offsets ------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self._local.log_end_offset

    @property
    def recovery_point(self) -> int:
        return self._local.recovery_point

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        """Set by the owner only (module docstring); clamped into ``[log_start_offset,
        log_end_offset]``."""
        self._high_watermark = min(max(offset, self._log_start), self.log_end_offset)
        self._producers.high_watermark_moved(self._high_watermark)

    @property
    def last_stable_offset(self) -> int:
        """The first offset a read_committed consumer may not read (see
        :mod:`transactions`): the high watermark, lowered by open transactions, never
        below the log start (retention may delete an open transaction's first batches)."""
        return max(self._log_start, self._producers.last_stable_offset(self._high_watermark))

    def aborted_transactions(self, fetch_offset: int, upper: int) -> list[AbortedTxn]:
        """Aborted transactions with data in ``[fetch_offset, upper)`` (Fetch's
        ``aborted_transactions`` for read_committed consumers)."""
        return self._producers.aborted_between(fetch_offset, upper)

    def open_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of its open transaction."""
        return self._producers.open_transactions()

    @property
    def size_bytes(self) -> int:
        return self._local.size_bytes

    @property
    def segments(self) -> list[LogSegment]:
        return self._local.segments.snapshot()

    @property
    def config(self) -> LogConfig:
        return self._local.config

    def update_config(self, config: LogConfig) -> None:
        """Applies to later appends, rolls, retention runs and flushes."""
        self._local.config = config

    def producer_state(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.producer(producer_id)

    @property
    def truncation_count(self) -> int:
        """How many times :meth:`truncate_to` rewrote the tail (the cleaner's checkpoint
        is stale after one: offsets below it may hold new data)."""
        return self._local.truncation_count

    def producer_last_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its newest batch, for every producer the log
        remembers (the cleaner keeps those batches so the sequence state survives)."""
        return self._producers.last_offsets()

    # -- appends ------------------------------------------------------------------------
    def append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int) -> AppendResult:
        """Validate, deduplicate, assign offsets and store one produce partition's data.

        Only the 61-byte batch headers are patched (base offset, partition leader epoch,
        and for LogAppendTime topics the timestamp fields plus CRC). A writable buffer is
        patched in place and written from there: the receive path hands over a private
        copy of the request (:mod:`brokerd.server.connection`), so that is the one
        user-space copy of produced data. A read-only buffer is copied once to be
        patched. Records are decoded only where a per-record check needs them (keys of a
        compacted topic, timestamps a batch header shows outside the CreateTime window:
        :mod:`record_checks`, whose error names every bad record).
        """
        now_ms = self._local.now_ms()
        records = memoryview(records)
        validated = validate_record_set(records, self.config, now_ms, from_client=True)
        check_client_records(records, validated, self.config, now_ms)
        duplicate = self._producers.duplicate_of(header for _, header in validated)
        if duplicate is not None:
            return AppendResult(
                duplicate.first_offset, duplicate.last_offset, -1, self._log_start, True
            )
        buffer = bytearray(records) if records.readonly else records
        append_time = now_ms if self.config.log_append_time else -1
        headers = leader_stamps.stamp(buffer, [position for position, _ in validated],
                                      self.log_end_offset, leader_epoch, append_time)
        self._append(buffer, headers, now_ms)
        return AppendResult(
            headers[0].base_offset, headers[-1].last_offset, append_time, self._log_start
        )

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> AppendResult:
        """Store batches whose offsets and epochs the leader already assigned.

        Offsets must continue at or after the log end and increase. Gaps (a compacted
        leader's log has them) are stored inside segments (see :mod:`local_log`).
        """
        records = memoryview(records)
        now_ms = self._local.now_ms()
        validated = validate_record_set(records, self.config, now_ms, from_client=False)
        expected = self.log_end_offset
        for _, header in validated:
            if header.base_offset < expected:
                raise InvalidRecordError(
                    f"follower batch at offset {header.base_offset} < expected {expected}"
                )
            expected = header.last_offset + 1
        for start, end, headers in segment_sized_runs(validated, self.config.segment_bytes):
            self._append(records[start:end], headers, now_ms)
        first, last = validated[0][1].base_offset, validated[-1][1].last_offset
        return AppendResult(first, last, -1, self._log_start)

    def _append(self, data: memoryview | bytearray, headers: list[BatchHeader], now_ms: int) -> None:
        # Epochs before data: a flush that sees the data then sees (and waits for) its
        # epoch's checkpoint write before moving the recovery point past it.
        for header in headers:
            self.leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
        self._local.append(data, headers, now_ms)
        self._producers.appended(data, headers, self._local.segments.active.base_offset)

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool,
                      coordinator_epoch: int, leader_epoch: int,
                      bumped: bool = False) -> AppendResult:
        """WriteTxnMarkers: end ``producer_id``'s transaction here with a control batch.
        A marker older than the producer's epoch is fenced (INVALID_PRODUCER_EPOCH); a
        ``bumped`` one (transaction version 2) must be newer, or repeat the last one
        (answered as a duplicate, see ``LogProducers.check_marker``)."""
        repeated = self._producers.check_marker(producer_id, producer_epoch, bumped)
        if repeated is not None:
            return AppendResult(repeated, repeated, -1, self._log_start, duplicate=True)
        now_ms = self._local.now_ms()
        buffer, header = leader_stamps.stamped_marker(
            producer_id, producer_epoch, commit, coordinator_epoch, now_ms,
            self.log_end_offset, leader_epoch)
        self._append(buffer, [header], now_ms)
        return AppendResult(header.base_offset, header.last_offset, -1, self._log_start)

    def roll(self, base_offset: int | None = None) -> LogSegment:
        """Start a new active segment (see :meth:`LocalLog.roll`)."""
        return self._local.roll(base_offset)

    # -- reads --------------------------------------------------------------------------
    def read(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> ReadResult:
        """Whole batches from the one holding ``offset`` onwards, stopping before the first
        batch that reaches ``max_offset`` (exclusive; default: log end) or would exceed
        ``max_bytes`` (the first batch is returned regardless when ``min_one_batch``)."""
        end = self.log_end_offset
        if offset < self._log_start or offset > end:
            raise OffsetOutOfRangeError(
                f"offset {offset} outside [{self._log_start}, {end}] of {self.directory.name}"
            )
        upper = end if max_offset is None else min(max_offset, end)
        if offset >= upper:
            # A caught-up reader (the common case of every idle partition's fetch): no
            # batch can qualify, so skip the index lookup and the file scan.
            return ReadResult()
        return self._local.read(offset, upper, max_bytes, min_one_batch)

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(base offset, max timestamp) of the first batch whose max timestamp is >=
        ``timestamp_ms``, or None. Batch granularity: the exact record is at or after the
        returned offset, which is what a consumer seeking by time needs."""
        found = log_reads.first_batch_at_or_after(self._local.segments, timestamp_ms)
        if found is None:
            return None
        return max(found[0], self._log_start), found[1]

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(base offset, timestamp) of the first batch holding the log's largest timestamp
        (ListOffsets' MAX_TIMESTAMP); None if no batch has a timestamp."""
        found = log_reads.max_timestamp(self._local.segments)
        if found is None:
            return None
        return max(found[0], self._log_start), found[1]

    # -- log start, retention, truncation -----------------------------------------------
    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start to ``offset`` (-1 = high watermark), which
        must not pass the high watermark; whole segments below it are deleted."""
        if offset < 0:
            offset = self._high_watermark
        if offset > self._high_watermark:
            raise OffsetOutOfRangeError(
                f"cannot delete records before {offset}: above high watermark "
                f"{self._high_watermark}"
            )
        if offset > self._log_start:
            self._advance_log_start(offset)
            self._delete_oldest(lambda segment, next_base: next_base <= self._log_start)
        return self._log_start

    def enforce_retention(self, now_ms: int) -> int:
        """Delete old segments by ``retention.ms`` and ``retention.bytes`` (only with
        cleanup.policy delete) and those wholly below the log start, and forget expired
        producers. Returns the number of segments deleted. Never deletes the active
        segment or data above the high watermark."""
        self._producers.expire(now_ms, self.producer_id_expiration_ms)
        deleted = 0
        if self.config.deletes_old_segments and self.config.retention_ms >= 0:
            cutoff = now_ms - self.config.retention_ms
            deleted += self._delete_oldest(lambda segment, _: segment.largest_timestamp_ms() < cutoff)
        if self.config.deletes_old_segments and self.config.retention_bytes >= 0:
            deleted += self._delete_oldest(
                beyond_size(self.size_bytes - self.config.retention_bytes))
        deleted += self._delete_oldest(lambda _, next_base: next_base <= self._log_start)
        return deleted

    def _delete_oldest(self, should_delete: Callable[[LogSegment, int], bool]) -> int:
        """Delete segments oldest first while ``should_delete(segment, next_base)`` holds,
        keeping any segment reaching above the high watermark (Kafka's rule: not the LSO,
        so a hanging transaction cannot stop retention); the log start follows."""
        deleted = self._local.delete_oldest(lambda segment, next_base: (
            next_base <= self._high_watermark and should_delete(segment, next_base)))
        if deleted:
            self._advance_log_start(self._local.segments.first.base_offset)
        return deleted

    def _advance_log_start(self, offset: int) -> None:
        if offset <= self._log_start:
            return
        self._log_start = offset
        self._high_watermark = max(self._high_watermark, offset)
        self.leader_epoch_cache.truncate_from_start(offset)
        self._producers.forget_below(offset, [segment.base_offset for segment in self.segments])

    def delete_expired_files(self, now_ms: int) -> None:
        """Close and unlink deleted segments whose ``file.delete.delay.ms`` has passed."""
        self._local.delete_expired_files(now_ms)

    def truncate_to(self, offset: int) -> None:
        """Drop everything at or above ``offset`` (a follower removing a divergent tail),
        a batch straddling it whole; at or below the log start, restart empty there.  Past
        the end, epochs starting there go (led without a write; Kafka's rule)."""
        if offset >= self.log_end_offset:
            self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
            return
        if offset <= self._log_start:
            self._local.truncate_fully_and_start_at(offset)
            self._log_start = offset
        else:
            self._local.truncate_to(offset)
        end = self.log_end_offset
        self._high_watermark = min(self._high_watermark, end)
        self.leader_epoch_cache.truncate_from_end(end)
        self._producers.reload(self._local.segments, end, lambda snapshot: snapshot <= end)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every batch and restart the empty log at ``offset``: a follower whose log
        end fell below the leader's log start can no longer fetch what lies between."""
        self._local.truncate_fully_and_start_at(offset)
        self._log_start = self._high_watermark = offset
        self.leader_epoch_cache.clear()
        self._producers.restart_at(offset, self._local.segments)

    # -- compaction ---------------------------------------------------------------------
    def replace_segments(self, old: list[LogSegment], sizes: list[int], cleaned: LogSegment) -> bool:
        """Swap the cleaner's output into the log (see :meth:`LocalLog.replace_segments`);
        False if ``old`` changed meanwhile. Offsets never change."""
        return self._local.replace_segments(old, sizes, cleaned)

    def forget_aborted(self, entries: list[AbortedTxn]) -> None:
        """The cleaner removed every data batch of these aborted transactions."""
        self._producers.forget_aborted(entries, [segment.base_offset for segment in self.segments])

    # -- durability ---------------------------------------------------------------------
    def flush_due(self, now_ms: int) -> bool:
        """Whether the flush policy asks for :meth:`flush` (see :meth:`LocalLog.flush_due`)."""
        return self._local.flush_due(now_ms)

    def flush_pending(self) -> bool:
        """Whether anything is not flushed yet (see :meth:`LocalLog.flush_pending`)."""
        return self._local.flush_pending()

    def flush(self) -> None:
        """fsync every segment holding data between the recovery point and the log end,
        wait for the leader-epoch checkpoint to catch up (recovery re-derives epochs only
        above the recovery point), then advance the recovery point. Safe in a worker
        thread (module docstring). Event-loop callers test :meth:`flush_due` and run this
        in an executor."""
        target = self._local.flush()
        self.leader_epoch_cache.flush()
        self._producers.flush()
        self._local.mark_flushed(target)

    def take_producer_snapshot(self) -> None:
        """Snapshot producer state at the log end (reopening replays only later batches)."""
        self._producers.snapshot(self.log_end_offset)

    def close(self) -> None:
        """Clean close: flush, snapshot producer state, trim indexes, release files."""
        self.flush()
        self.take_producer_snapshot()
        self._local.close()

    def close_files(self) -> None:
        """Release the files without flushing or writing anything (its log dir failed, or
        the partition is being deleted)."""
        self._local.discard()
