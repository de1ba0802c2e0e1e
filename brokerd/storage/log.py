"""``Log``: one partition's directory ``<topic>-<partition>``: its segments, offsets,
producer state and leader-epoch history.

Directory contents: segments (``<base offset>.log/.index/.timeindex``), producer-state
snapshots (``<offset>.snapshot``), ``leader-epoch-checkpoint``, ``*.deleted`` files
of segments waiting ``file.delete.delay.ms`` before they are closed and unlinked, and
the cleaner's ``*.cleaned`` / ``*.swap`` files while compaction swaps segments.

Segments are contiguous: each one's base offset is its predecessor's next offset (the
last batch's last offset + 1), even when offsets skip (compaction, or a follower copying
a compacted leader): the gap then lies inside a segment. Crash recovery relies on this
to tell a lost segment tail from a gap (:mod:`log_loader`).

Offsets: ``log_start_offset <= high_watermark <= log_end_offset``; reads are allowed in
``[log_start_offset, log_end_offset]`` and only return batches below the caller's bound
(the high watermark for consumers). The ``recovery_point`` is the offset below which
everything is fsynced; recovery after a crash starts there.

Thread-safety: every method must be called from one thread (the broker's event loop),
except :meth:`flush`, which is designed to run in a worker thread concurrently with
appends and reads: it snapshots the segment list and target offset under ``_lock``,
fsyncs without the lock (appends keep going into the page cache), and publishes the new
recovery point under the lock again. Structural changes (roll, segment deletion,
truncation, close) also take ``_lock``; segment files are closed only after the delete
delay, so a flush or sendfile in flight never sees a closed descriptor in practice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from brokerd.protocol.records import (
    BatchHeader,
    parse_batch_header,
    patch_base_offset,
    patch_partition_leader_epoch,
    set_log_append_time,
)
from brokerd.storage import log_loader, log_reads
from brokerd.storage.checkpoint import LEADER_EPOCH_CHECKPOINT, fsync_directory
from brokerd.storage.cleaner_records import require_keys
from brokerd.storage.config import LogConfig
from brokerd.storage.errors import InvalidRecordError, OffsetOutOfRangeError
from brokerd.storage.leader_epoch import LeaderEpochCache
from brokerd.storage.offset_index import MAX_RELATIVE_OFFSET
from brokerd.storage.producer_state import ProducerEntry
from brokerd.storage.results import AppendResult, ReadResult
from brokerd.storage.segment import SWAP_SUFFIX, LogSegment
from brokerd.storage.validation import validate_record_set

logger = logging.getLogger(__name__)

SNAPSHOTS_KEPT = 2
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
    ) -> None:
        self.directory = directory
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.config = config
        self._clock = clock
        self._lock = threading.Lock()
        # True: the high watermark is the log end (a single-replica partition exposes
        # everything appended). Replication sets False and drives ``high_watermark``,
        # which then starts from the checkpointed value.
        self.high_watermark_follows_log_end = True
        directory.mkdir(parents=True, exist_ok=True)
        self._segments = log_loader.load_segments(
            directory, config, recovery_point, clean_shutdown, log_start_offset, self._now_ms()
        )
        end = self.log_end_offset
        self._log_start = min(max(log_start_offset, self._segments.first.base_offset), end)
        self._high_watermark = min(max(high_watermark, self._log_start), end)
        self.leader_epoch_cache = LeaderEpochCache(directory / LEADER_EPOCH_CHECKPOINT)
        self.leader_epoch_cache.truncate_from_end(end)
        if not clean_shutdown:  # the checkpoint may lag the log (see leader_epoch)
            log_loader.restore_leader_epochs(self.leader_epoch_cache, self._segments,
                                             min(recovery_point, end))
        self.leader_epoch_cache.truncate_from_start(self._log_start)
        self._producers = log_loader.load_producer_state(directory, self._segments, end)
        self._producers.evict_below(self._log_start)
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._appended_messages = 0
        self._flushed_messages = 0
        self._last_flush_ms = self._now_ms()
        self._truncations = 0  # lets a concurrent flush notice that its target vanished
        self._recovery_point = min(recovery_point, end)
        if clean_shutdown:
            self._recovery_point = end
        else:
            self.flush()  # recovered data is now durable: the next crash starts from here

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # -- offsets ------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self._segments.active.next_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def high_watermark(self) -> int:
        if self.high_watermark_follows_log_end:
            return self.log_end_offset
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        """Clamped into ``[log_start_offset, log_end_offset]``."""
        self._high_watermark = min(max(offset, self._log_start), self.log_end_offset)

    @property
    def size_bytes(self) -> int:
        return self._segments.size_bytes

    @property
    def segments(self) -> list[LogSegment]:
        return self._segments.snapshot()

    def update_config(self, config: LogConfig) -> None:
        """Applies to later appends, rolls, retention runs and flushes."""
        self.config = config

    def producer_state(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.producers.get(producer_id)

    @property
    def truncation_count(self) -> int:
        """How many times :meth:`truncate_to` rewrote the tail (the cleaner's checkpoint
        is stale after one: offsets below it may hold new data)."""
        return self._truncations

    def producer_last_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its newest batch, for every producer the log
        remembers (the cleaner keeps those batches so the sequence state survives)."""
        return {pid: entry.last_offset for pid, entry in self._producers.producers.items()}

    # -- appends ------------------------------------------------------------------------
    def append_as_leader(
        self, records: bytes | bytearray | memoryview, leader_epoch: int
    ) -> AppendResult:
        """Validate, deduplicate, assign offsets and store one produce partition's data.

        Only the 61-byte batch headers are patched (base offset, partition leader epoch,
        and for LogAppendTime topics the timestamp fields plus CRC). A read-only buffer is
        copied once so it can be patched. Compacted topics also decode the records to
        refuse keyless ones (INVALID_RECORD, as Kafka).
        """
        now_ms = self._now_ms()
        records = memoryview(records)
        validated = validate_record_set(records, self.config, now_ms, from_client=True)
        if self.config.compacts:
            for position, header in validated:
                require_keys(records, position, header)
        duplicate = self._producers.check(header for _, header in validated)
        if duplicate is not None:
            return AppendResult(
                duplicate.first_offset, duplicate.last_offset, -1, self._log_start, True
            )
        buffer = bytearray(records) if records.readonly else records
        append_time = now_ms if self.config.log_append_time else -1
        offset = self.log_end_offset
        headers: list[BatchHeader] = []
        for position, _ in validated:
            patch_base_offset(buffer, position, offset)
            patch_partition_leader_epoch(buffer, position, leader_epoch)
            if append_time >= 0:
                set_log_append_time(buffer, position, append_time)
            patched = parse_batch_header(buffer, position)
            headers.append(patched)
            offset = patched.last_offset + 1
        self._append(buffer, headers, now_ms)
        return AppendResult(
            headers[0].base_offset, headers[-1].last_offset, append_time, self._log_start
        )

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> AppendResult:
        """Store batches whose offsets and epochs the leader already assigned.

        Offsets must continue at or after the log end and increase. Gaps (a compacted
        leader's log has them) are stored inside segments (see the module docstring).
        """
        records = memoryview(records)
        validated = validate_record_set(records, self.config, self._now_ms(), from_client=False)
        expected = self.log_end_offset
        headers = []
        for _, header in validated:
            if header.base_offset < expected:
                raise InvalidRecordError(
                    f"follower batch at offset {header.base_offset} < expected {expected}"
                )
            headers.append(header)
            expected = header.last_offset + 1
        self._append(records, headers, self._now_ms())
        first, last = headers[0].base_offset, headers[-1].last_offset
        return AppendResult(first, last, -1, self._log_start)

    def _append(
        self, data: memoryview | bytearray, headers: list[BatchHeader], now_ms: int
    ) -> None:
        first, last = headers[0].base_offset, headers[-1].last_offset
        segment = self._maybe_roll(len(data), first, last, now_ms)
        # Epochs before data: a flush that sees the data then sees (and waits for) its
        # epoch's checkpoint write before moving the recovery point past it.
        for header in headers:
            self.leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
        segment.append(data, headers)
        for header in headers:
            self._producers.update(header)
            self._appended_messages += header.records_count

    def _maybe_roll(self, size: int, base_offset: int, last_offset: int, now_ms: int) -> LogSegment:
        """The segment to append to, rolling first when Kafka would: the data would push
        the segment past ``segment.bytes``, the segment is older than ``segment.ms``, an
        index is full, or ``last_offset`` does not fit the segment's relative offsets.

        A new segment starts at the log end, not at ``base_offset``, so segments stay
        contiguous; only when ``last_offset`` would not fit relative offsets from there
        (a gap of ~2**31 offsets) does it start at ``last_offset - MAX_RELATIVE_OFFSET``,
        the lowest base that fits, which :mod:`log_loader` recognises.
        """
        active = self._segments.active
        if active.size == 0:
            must_roll = not active.can_hold_offset(last_offset)
        else:
            must_roll = (
                active.size + size > self.config.segment_bytes
                or now_ms - active.created_ms > self.config.segment_ms
                or active.is_full()
                or not active.can_hold_offset(last_offset)
            )
        if not must_roll:
            return active
        return self.roll(max(self.log_end_offset, last_offset - MAX_RELATIVE_OFFSET))

    def roll(self, base_offset: int | None = None) -> LogSegment:
        """Seal the active segment and start a new one at ``base_offset`` (default: log
        end). An empty active segment is replaced, or kept if it already starts there.

        Steps, each crash-safe on its own: trim the old segment's indexes (a crash before
        leaves untrimmed indexes that loading rebuilds); create the new files (a crash
        mid-way leaves an empty segment whose missing/zero indexes loading rebuilds).
        """
        with self._lock:
            base = self.log_end_offset if base_offset is None else base_offset
            active = self._segments.active
            if active.size == 0:
                if active.base_offset == base:
                    return active
                self._segments.remove(active)
                active.delete()
            else:
                active.seal()
            segment = LogSegment(
                self.directory,
                base,
                self.config.index_interval_bytes,
                self.config.segment_index_bytes,
                active=True,
                created_ms=self._now_ms(),
            )
            self._segments.add(segment)
            return segment

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
        return ReadResult(
            log_reads.read_regions(self._segments, offset, upper, max_bytes, min_one_batch)
        )

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(base offset, max timestamp) of the first batch whose max timestamp is >=
        ``timestamp_ms``, or None. Batch granularity: the exact record is at or after the
        returned offset, which is what a consumer seeking by time needs."""
        found = log_reads.first_batch_at_or_after(self._segments, timestamp_ms)
        if found is None:
            return None
        return max(found[0], self._log_start), found[1]

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(base offset, timestamp) of the first batch holding the log's largest timestamp
        (ListOffsets' MAX_TIMESTAMP); None if no batch has a timestamp."""
        found = log_reads.max_timestamp(self._segments)
        if found is None:
            return None
        return max(found[0], self._log_start), found[1]

    # -- log start, retention, truncation -----------------------------------------------
    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start to ``offset`` (-1 = high watermark), which
        must not pass the high watermark; whole segments below it are deleted."""
        if offset < 0:
            offset = self.high_watermark
        if offset > self.high_watermark:
            raise OffsetOutOfRangeError(
                f"cannot delete records before {offset}: above high watermark "
                f"{self.high_watermark}"
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
            deleted += self._delete_oldest(
                lambda segment, _: segment.largest_timestamp_ms() < cutoff
            )
        if self.config.deletes_old_segments and self.config.retention_bytes >= 0:
            # Delete a segment while the log stays at or above retention.bytes without it.
            excess = self.size_bytes - self.config.retention_bytes

            def over_size(segment: LogSegment, _: int) -> bool:
                nonlocal excess
                if segment.size > excess:
                    return False
                excess -= segment.size
                return True

            deleted += self._delete_oldest(over_size)
        deleted += self._delete_oldest(lambda _, next_base: next_base <= self._log_start)
        return deleted

    def _delete_oldest(self, should_delete: Callable[[LogSegment, int], bool]) -> int:
        """Delete segments oldest first while ``should_delete(segment, next_base)`` holds;
        the active segment and segments reaching above the high watermark are kept."""
        deleted = 0
        with self._lock:
            while len(self._segments) > 1:
                segment = self._segments.first
                next_base = self._segments.next_base_after(segment)
                assert next_base is not None
                if next_base > self.high_watermark or not should_delete(segment, next_base):
                    break
                self._segments.remove(segment)
                self._schedule_delete(segment)
                deleted += 1
        if deleted:
            self._advance_log_start(self._segments.first.base_offset)
        return deleted

    def _advance_log_start(self, offset: int) -> None:
        if offset <= self._log_start:
            return
        self._log_start = offset
        self._high_watermark = max(self._high_watermark, offset)
        self.leader_epoch_cache.truncate_from_start(offset)
        self._producers.evict_below(offset)

    def _schedule_delete(self, segment: LogSegment) -> None:
        segment.mark_deleted()
        due = self._now_ms() + self.config.file_delete_delay_ms
        self._pending_deletes.append((due, segment))

    def delete_expired_files(self, now_ms: int) -> None:
        """Close and unlink deleted segments whose ``file.delete.delay.ms`` has passed."""
        due = [segment for at, segment in self._pending_deletes if at <= now_ms]
        self._pending_deletes = [(at, s) for at, s in self._pending_deletes if at > now_ms]
        for segment in due:
            segment.delete()

    def truncate_to(self, offset: int) -> None:
        """Drop everything at or above ``offset`` (a follower removing a divergent tail).
        A batch straddling ``offset`` is dropped whole. Below the log start, the log is
        emptied and restarts at ``offset``."""
        if offset >= self.log_end_offset:
            return
        with self._lock:
            if offset <= self._log_start:
                doomed = self._segments.snapshot()
            else:
                doomed = self._segments.at_or_above(offset)
            for segment in doomed:
                self._segments.remove(segment)
                self._schedule_delete(segment)
            if len(self._segments):
                self._segments.active.truncate_to(offset)
                self._segments.active.make_active(self.config.segment_index_bytes)
            else:
                self._start_empty_at(offset)
            end = self.log_end_offset
            self._recovery_point = min(self._recovery_point, end)
            self._high_watermark = min(self._high_watermark, end)
            self._truncations += 1
        self.leader_epoch_cache.truncate_from_end(end)
        log_loader.delete_snapshots(self.directory, lambda snapshot: snapshot <= end)
        self._producers = log_loader.load_producer_state(self.directory, self._segments, end)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every batch and restart the empty log at ``offset``: a follower whose log
        end fell below the leader's log start can no longer fetch what lies between."""
        with self._lock:
            for segment in self._segments.snapshot():
                self._segments.remove(segment)
                self._schedule_delete(segment)
            self._start_empty_at(offset)
            self._recovery_point = self._high_watermark = offset
            self._truncations += 1
        self.leader_epoch_cache.clear()
        log_loader.delete_snapshots(self.directory, lambda snapshot: False)
        self._producers = log_loader.load_producer_state(self.directory, self._segments, offset)

    def _start_empty_at(self, offset: int) -> None:
        """With no segment left: a fresh active segment at ``offset``, the new log start."""
        self._log_start = offset
        self._segments.add(
            LogSegment(
                self.directory,
                offset,
                self.config.index_interval_bytes,
                self.config.segment_index_bytes,
                active=True,
                created_ms=self._now_ms(),
            )
        )

    # -- compaction ---------------------------------------------------------------------
    def replace_segments(
        self, old: list[LogSegment], sizes: list[int], cleaned: LogSegment
    ) -> bool:
        """Swap ``cleaned`` (a fsynced ``.cleaned`` segment recopied from ``old``, whose
        sizes were ``sizes``) into the log; Kafka's ``replaceSegments`` order, each step
        crash-safe:

        1. ``.cleaned`` -> ``.swap`` (before: loading deletes ``.cleaned`` files);
        2. in memory, ``old`` -> ``cleaned``: reads now see the cleaned segment;
        3. ``old`` -> ``.deleted`` (closed after ``file.delete.delay.ms``, so readers
           holding their file regions finish undisturbed);
        4. ``.swap`` -> live names.

        A crash between 1 and 4 is completed at load: a ``.swap`` replaces every segment
        whose base offset lies in its offset range (:func:`log_loader.complete_swaps`).
        Returns False and deletes ``cleaned`` if ``old`` is no longer exactly part of the
        log (retention, truncation or a roll changed it meanwhile).
        """
        with self._lock:
            inactive = {id(segment) for segment in self._segments.snapshot()[:-1]}
            unchanged = all(
                id(segment) in inactive and segment.size == size
                for segment, size in zip(old, sizes, strict=True)
            )
            if not unchanged:
                cleaned.delete()
                return False
            cleaned.change_suffix(SWAP_SUFFIX)
            fsync_directory(self.directory)
            for segment in old:
                self._segments.remove(segment)
            self._segments.add(cleaned)
            for segment in old:
                self._schedule_delete(segment)
            cleaned.change_suffix("")
            fsync_directory(self.directory)
        return True

    # -- durability ---------------------------------------------------------------------
    def flush_due(self, now_ms: int) -> bool:
        """Whether ``flush.messages`` / ``flush.ms`` ask for an fsync now, or a rolled
        segment has not been fsynced yet (Kafka flushes every segment it rolls)."""
        unflushed = self._appended_messages - self._flushed_messages
        return (
            self._recovery_point < self._segments.active.base_offset
            or unflushed >= self.config.flush_messages
            or (unflushed > 0 and now_ms - self._last_flush_ms >= self.config.flush_ms)
        )

    def maybe_flush(self, now_ms: int) -> bool:
        """Flush in the calling thread if :meth:`flush_due`; returns whether it did.
        Event-loop callers should test ``flush_due`` and run :meth:`flush` in an executor."""
        if not self.flush_due(now_ms):
            return False
        self.flush()
        return True

    def flush(self) -> None:
        """fsync every segment holding data between the recovery point and the log end,
        wait for the leader-epoch checkpoint to catch up (recovery re-derives epochs only
        above the recovery point), then advance the recovery point. Safe in a worker
        thread (module docstring)."""
        with self._lock:
            target = self.log_end_offset
            messages = self._appended_messages
            truncations = self._truncations
            dirty = [
                segment
                for segment in self._segments.snapshot()
                if segment.next_offset > self._recovery_point
            ]
        for segment in dirty:
            try:
                segment.flush()
            except ValueError:
                pass  # closed meanwhile: its segment was deleted and needs no durability
        self.leader_epoch_cache.flush()
        with self._lock:
            if truncations == self._truncations:  # else offsets below target were rewritten
                self._recovery_point = max(self._recovery_point, target)
            self._flushed_messages = max(self._flushed_messages, messages)
            self._last_flush_ms = self._now_ms()

    def take_producer_snapshot(self) -> None:
        """Write the producer state as of the log end, keeping the newest few snapshots,
        so reopening replays only the batches after it."""
        end = self.log_end_offset
        if end not in log_loader.snapshot_offsets(self.directory):
            self._producers.write_snapshot(log_loader.snapshot_path(self.directory, end))
        kept = set(log_loader.snapshot_offsets(self.directory)[-SNAPSHOTS_KEPT:])
        log_loader.delete_snapshots(self.directory, lambda offset: offset in kept)

    def close(self) -> None:
        """Clean close: flush, snapshot producer state, trim indexes, release files."""
        self.flush()
        self.take_producer_snapshot()
        with self._lock:
            for _, segment in self._pending_deletes:
                segment.delete()
            self._pending_deletes = []
            for segment in self._segments:
                segment.close()
