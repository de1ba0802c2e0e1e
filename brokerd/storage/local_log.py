"""``LocalLog``: a partition directory's segments and their lifecycle (Kafka's
``LocalLog``): append, roll, read file regions, flush, delete, truncate, swap.

Directory contents it manages: segments (``<base offset>.log/.index/.timeindex``, see
:mod:`segment`), ``*.deleted`` files of segments waiting ``file.delete.delay.ms`` before
they are closed and unlinked, and the cleaner's ``*.cleaned`` / ``*.swap`` files while
compaction swaps segments. The owning :class:`~brokerd.storage.log.Log` keeps its own
files beside them (producer-state snapshots, ``leader-epoch-checkpoint``).

Segments are contiguous: each one's base offset is its predecessor's next offset (the
last batch's last offset + 1), even when offsets skip (compaction, or a follower copying
a compacted leader): the gap then lies inside a segment. Crash recovery relies on this
to tell a lost segment tail from a gap (:mod:`log_loader`).

The ``recovery_point`` is the offset below which every segment is fsynced; recovery
after a crash starts there. It never exceeds the log end.

What a batch means is not this class's business: it knows no log start offset, high
watermark, producers or leader epochs. The owner decides which old segments may go (the
predicate of :meth:`delete_oldest`) and writes what must be durable before the recovery
point moves between :meth:`flush` and :meth:`mark_flushed`.

Thread-safety: every method must be called from one thread (the broker's event loop),
except :meth:`flush` and :meth:`mark_flushed`, which are designed to run in a worker
thread concurrently with appends and reads: ``flush`` snapshots the segment list and
target offset under ``_lock`` and fsyncs without it (appends keep going into the page
cache); ``mark_flushed`` publishes the new recovery point under the lock again.
Structural changes (roll, segment deletion, truncation, swap, close) also take
``_lock``; segment files are closed only after the delete delay, so a flush or sendfile
in flight never sees a closed descriptor in practice.

Flush bookkeeping: nothing polls idle logs.  Every append and every roll calls the
``on_unflushed`` callback (the :class:`~brokerd.storage.manager.LogManager` adds the
partition to its set of logs with something to flush); the owner of that set asks
:meth:`flush_pending` to learn when a log may leave it again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from brokerd.protocol.records import BatchHeader
from brokerd.storage import log_loader, log_reads
from brokerd.storage.checkpoint import fsync_directory
from brokerd.storage.config import LogConfig
from brokerd.storage.offset_index import MAX_RELATIVE_OFFSET
from brokerd.storage.results import ReadResult
from brokerd.storage.segment import SWAP_SUFFIX, LogSegment


class FlushTarget(NamedTuple):
    """What one :meth:`LocalLog.flush` made durable, for :meth:`LocalLog.mark_flushed`."""

    offset: int  # the log end when the flush started
    messages: int  # records appended by then
    truncations: int  # truncations by then: a later one voids ``offset``


class LocalLog:
    """The segments of one partition directory; see the module docstring."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        *,
        recovery_point: int = 0,
        clean_shutdown: bool = False,
        initial_offset: int = 0,
        clock: Callable[[], float] = time.time,
        on_unflushed: Callable[[], None] = lambda: None,
    ) -> None:
        """Open the directory, recovering segments from ``recovery_point`` after an
        unclean shutdown; an empty directory starts with a segment at ``initial_offset``.
        ``on_unflushed`` is called after every append and roll (module docstring)."""
        self.directory = directory
        self.config = config
        self._clock = clock
        self._on_unflushed = on_unflushed
        self._lock = threading.Lock()
        created = not directory.exists()
        directory.mkdir(parents=True, exist_ok=True)
        # Directory entries not yet durable, made so by the next flush, off the event
        # loop (Kafka's KAFKA-3968): this directory's own, in its log dir, when it is new;
        # the segment files', after each new segment.  Creating a partition used to fsync
        # the log dir on the event loop, a journal commit per partition while a burst of
        # thousands was created (Kafka's first fix for this failed at 9,000 partitions).
        self._new_directory = created
        self._new_segments = 1 if created else 0
        self.segments = log_loader.load_segments(
            directory, config, recovery_point, clean_shutdown, initial_offset, self.now_ms()
        )
        end = self.log_end_offset
        self._recovery_point = end if clean_shutdown else min(recovery_point, end)
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._appended_messages = 0
        self._flushed_messages = 0
        self._last_flush_ms = self.now_ms()
        self._truncations = 0  # lets a concurrent flush notice that its target vanished

    def now_ms(self) -> int:
        """The injected clock in milliseconds (tests move it by hand)."""
        return int(self._clock() * 1000)

    @property
    def log_end_offset(self) -> int:
        return self.segments.active.next_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def size_bytes(self) -> int:
        return self.segments.size_bytes

    @property
    def truncation_count(self) -> int:
        """How many times the tail was rewritten (:meth:`truncate_to` and
        :meth:`truncate_fully_and_start_at`)."""
        return self._truncations

    # -- appends ------------------------------------------------------------------------
    def append(
        self, data: bytes | bytearray | memoryview, headers: list[BatchHeader], now_ms: int
    ) -> None:
        """Write ``data`` (the concatenation of ``headers``' batches, offsets final and at
        or above the log end) to the active segment, rolling first if Kafka would."""
        segment = self._maybe_roll(len(data), headers[-1].last_offset, now_ms)
        segment.append(data, headers)
        self._appended_messages += sum(header.records_count for header in headers)
        self._on_unflushed()

    def _maybe_roll(self, size: int, last_offset: int, now_ms: int) -> LogSegment:
        """The segment to append to, rolling first when Kafka would: the data would push
        the segment past ``segment.bytes``, the segment is older than ``segment.ms``, an
        index is full, or ``last_offset`` does not fit the segment's relative offsets.

        A new segment starts at the log end, so segments stay contiguous; only when
        ``last_offset`` would not fit relative offsets from there (a gap of ~2**31
        offsets) does it start at ``last_offset - MAX_RELATIVE_OFFSET``, the lowest base
        that fits, which :mod:`log_loader` recognises.
        """
        active = self.segments.active
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
            active = self.segments.active
            if active.size == 0:
                if active.base_offset == base:
                    return active
                self.segments.remove(active)
                active.delete()
            else:
                active.seal()
            return self._add_active_segment(base)

    def _add_active_segment(self, base_offset: int) -> LogSegment:
        segment = LogSegment(
            self.directory,
            base_offset,
            self.config.index_interval_bytes,
            self.config.segment_index_bytes,
            active=True,
            created_ms=self.now_ms(),
        )
        self.segments.add(segment)
        self._new_segments += 1
        self._on_unflushed()
        return segment

    # -- reads --------------------------------------------------------------------------
    def read(self, offset: int, upper: int, max_bytes: int, min_one_batch: bool) -> ReadResult:
        """File regions of whole batches from the one holding ``offset`` (which the caller
        checked is in the log), stopping before the first batch reaching ``upper``
        (exclusive) or pushing the total past ``max_bytes`` (see
        :func:`log_reads.read_regions`)."""
        return ReadResult(
            log_reads.read_regions(self.segments, offset, upper, max_bytes, min_one_batch)
        )

    # -- deletion -----------------------------------------------------------------------
    def delete_oldest(self, should_delete: Callable[[LogSegment, int], bool]) -> int:
        """Delete segments oldest first while ``should_delete(segment, next_base)`` holds
        (``next_base``: the following segment's base offset); the active segment is
        always kept. Returns the number deleted."""
        deleted = 0
        with self._lock:
            while len(self.segments) > 1:
                segment = self.segments.first
                next_base = self.segments.next_base_after(segment)
                assert next_base is not None
                if not should_delete(segment, next_base):
                    break
                self.segments.remove(segment)
                self._schedule_delete(segment)
                deleted += 1
        return deleted

    def _schedule_delete(self, segment: LogSegment) -> None:
        segment.mark_deleted()
        due = self.now_ms() + self.config.file_delete_delay_ms
        self._pending_deletes.append((due, segment))

    def delete_expired_files(self, now_ms: int) -> None:
        """Close and unlink deleted segments whose ``file.delete.delay.ms`` has passed."""
        due = [segment for at, segment in self._pending_deletes if at <= now_ms]
        self._pending_deletes = [(at, s) for at, s in self._pending_deletes if at > now_ms]
        for segment in due:
            segment.delete()

    def truncate_to(self, offset: int) -> None:
        """Drop everything at or above ``offset``; a batch straddling it is dropped whole.
        If no segment is left (``offset`` at or below the first one's base), the empty
        log restarts at ``offset``."""
        with self._lock:
            for segment in self.segments.at_or_above(offset):
                self.segments.remove(segment)
                self._schedule_delete(segment)
            if len(self.segments):
                self.segments.active.truncate_to(offset)
                self.segments.active.make_active(self.config.segment_index_bytes)
            else:
                self._add_active_segment(offset)
            self._truncated()

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and restart the empty log at ``offset``."""
        with self._lock:
            for segment in self.segments.snapshot():
                self.segments.remove(segment)
                self._schedule_delete(segment)
            self._add_active_segment(offset)
            self._truncated()

    def _truncated(self) -> None:
        """Under ``_lock``, after the tail changed: nothing above the new end is durable
        any more, and a flush in flight must not publish its (vanished) target."""
        self._recovery_point = min(self._recovery_point, self.log_end_offset)
        self._truncations += 1

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
            inactive = {id(segment) for segment in self.segments.snapshot()[:-1]}
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
                self.segments.remove(segment)
            self.segments.add(cleaned)
            for segment in old:
                self._schedule_delete(segment)
            cleaned.change_suffix("")
            fsync_directory(self.directory)
        return True

    # -- durability ---------------------------------------------------------------------
    def flush_pending(self) -> bool:
        """Whether anything appended or rolled is not flushed yet: while this holds,
        :meth:`flush_due` may become true with time alone (``flush.ms``)."""
        return (self._appended_messages > self._flushed_messages
                or self._recovery_point < self.segments.active.base_offset)

    def flush_due(self, now_ms: int) -> bool:
        """Whether ``flush.messages`` / ``flush.ms`` ask for an fsync now, or a rolled
        segment has not been fsynced yet (Kafka flushes every segment it rolls)."""
        unflushed = self._appended_messages - self._flushed_messages
        return (
            self._recovery_point < self.segments.active.base_offset
            or unflushed >= self.config.flush_messages
            or (unflushed > 0 and now_ms - self._last_flush_ms >= self.config.flush_ms)
        )

    def flush(self) -> FlushTarget:
        """fsync every segment holding data between the recovery point and the log end,
        then the directories holding entries created since the last flush; the recovery
        point moves only at :meth:`mark_flushed` with the returned target.  Safe in a
        worker thread (module docstring)."""
        with self._lock:
            target = FlushTarget(self.log_end_offset, self._appended_messages, self._truncations)
            dirty = [
                segment
                for segment in self.segments.snapshot()
                if segment.next_offset > self._recovery_point
            ]
            new_segments, new_directory = self._new_segments, self._new_directory
        for segment in dirty:
            try:
                segment.flush()
            except ValueError:
                pass  # closed meanwhile: its segment was deleted and needs no durability
        self._sync_directories(new_segments, new_directory)
        return target

    def _sync_directories(self, new_segments: int, new_directory: bool) -> None:
        """fsync this directory if ``new_segments`` were created in it, and its log dir if
        it is ``new_directory``; entries created meanwhile stay owed to the next flush."""
        try:
            if new_segments:
                fsync_directory(self.directory)
            if new_directory:
                fsync_directory(self.directory.parent)
        except FileNotFoundError:
            return  # renamed for deletion meanwhile: nothing left to make durable
        with self._lock:
            self._new_segments -= new_segments
            if new_directory:
                self._new_directory = False

    def mark_flushed(self, target: FlushTarget) -> None:
        """Publish what :meth:`flush` made durable: the recovery point moves to its
        target unless a truncation rewrote offsets below it meanwhile."""
        with self._lock:
            if target.truncations == self._truncations:
                self._recovery_point = max(self._recovery_point, target.offset)
            self._flushed_messages = max(self._flushed_messages, target.messages)
            self._last_flush_ms = self.now_ms()

    def discard(self) -> None:
        """Release every segment's files, pending deletions included, without trimming,
        syncing or unlinking anything: the directory is being removed whole (trimming an
        index msyncs it, most of the time deleting a topic's logs took), or its disk
        failed (loading at the next start rebuilds what was left untrimmed)."""
        with self._lock:
            for _, segment in self._pending_deletes:
                segment.discard()
            self._pending_deletes = []
            for segment in self.segments:
                segment.discard()

    def close(self) -> None:
        """Release every file: pending deletions now, live segments trimmed and closed
        (the caller flushed first if it wants a clean shutdown)."""
        with self._lock:
            for _, segment in self._pending_deletes:
                segment.delete()
            self._pending_deletes = []
            for segment in self.segments:
                segment.close()
