"""Opening a partition directory: leftover cleanup, segment loading and crash recovery.

After a clean shutdown every segment and index is trusted (indexes are still
sanity-checked and rebuilt if they look wrong). After an unclean one, every segment from
the one holding the recovery point onwards is re-validated batch by batch (length,
CRC32C, increasing offsets); the first invalid byte and everything after it, including
later segments, is removed, because bytes past a torn write are not trustworthy.

Before that, an interrupted cleaner swap is completed (:func:`complete_swaps`), and files
with suffixes ``.deleted`` / ``.tmp`` / ``.cleaned`` (unfinished deletions, atomic
writes, cleaner output), swap indexes and index files without a ``.log`` are removed.
Not thread-safe: runs before the log is used.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from brokerd.protocol.records import BatchHeader
from brokerd.storage.checkpoint import fsync_directory
from brokerd.storage.config import LogConfig
from brokerd.storage.errors import CorruptRecordError
from brokerd.storage.leader_epoch import LeaderEpochCache
from brokerd.storage.offset_index import MAX_RELATIVE_OFFSET
from brokerd.storage.producer_state import SNAPSHOT_SUFFIX, ProducerStateManager
from brokerd.storage.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    iter_file_batches,
    segment_stem,
)
from brokerd.storage.segments import LogSegments
from brokerd.storage.transactions import CONTROL_PREFIX_BYTES, control_type
from brokerd.storage.txn_index import PartitionTransactions

log = logging.getLogger(__name__)


def remove_leftovers(directory: Path) -> None:
    """Finish interrupted deletions and atomic writes, drop unfinished cleaner output,
    swap indexes (a completed swap rebuilds them) and orphan indexes."""
    stems = {p.stem for p in directory.glob("*" + LOG_SUFFIX)}
    for path in directory.iterdir():
        orphan_index = path.suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX) and path.stem not in stems
        swap_index = path.suffix == SWAP_SUFFIX and not path.name.endswith(LOG_SUFFIX + SWAP_SUFFIX)
        if path.suffix in (DELETED_SUFFIX, ".tmp", CLEANED_SUFFIX) or orphan_index or swap_index:
            path.unlink(missing_ok=True)


def complete_swaps(directory: Path) -> None:
    """Finish cleaner swaps a crash interrupted, as Kafka does.

    A ``<base>.log.swap`` was fsynced before it got that name, so it is complete: it
    replaces every segment whose base offset lies in ``[base, its next offset)``. Those
    segments (some may already be ``.deleted``) are removed and the swap takes its live
    name; its indexes are rebuilt when the segment is opened. Offsets are exact because
    a cleaned segment keeps the last batch of its source range (:mod:`cleaner_build`).
    """
    for swap in sorted(directory.glob("*" + LOG_SUFFIX + SWAP_SUFFIX)):
        base = int(swap.name.removesuffix(LOG_SUFFIX + SWAP_SUFFIX))
        end = max(_next_offset(swap, base), base + 1)
        for live in directory.glob("*" + LOG_SUFFIX):
            if base <= int(live.stem) < end:
                log.warning("deleting %s, replaced by an interrupted swap", live)
                _delete_segment_files(directory, int(live.stem))
        _delete_segment_files(directory, base)
        os.replace(swap, directory / (segment_stem(base) + LOG_SUFFIX))
        fsync_directory(directory)


def _next_offset(path: Path, base_offset: int) -> int:
    """One past the last offset of the (trusted) batches in ``path``."""
    next_offset = base_offset
    with path.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        for _, header in iter_file_batches(file.fileno(), 0, size, path):
            next_offset = header.last_offset + 1
    return next_offset


def _delete_segment_files(directory: Path, base_offset: int) -> None:
    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        (directory / (segment_stem(base_offset) + suffix)).unlink(missing_ok=True)


def load_segments(
    directory: Path,
    config: LogConfig,
    recovery_point: int,
    clean_shutdown: bool,
    initial_offset: int,
    now_ms: int,
) -> LogSegments:
    """Open (and if needed recover) every segment; the last one is made active.

    ``initial_offset`` is the base offset of the segment created for an empty directory.
    """
    complete_swaps(directory)
    remove_leftovers(directory)
    segments = LogSegments()
    for path in sorted(directory.glob("*" + LOG_SUFFIX)):
        segments.add(_open_segment(directory, int(path.stem), config, now_ms))
    if not clean_shutdown and len(segments):
        _recover_from(segments, recovery_point)
    for segment in segments.snapshot():
        if not segment.next_offset > segment.base_offset and segment is not segments.active:
            log.warning("removing empty non-final segment %s", segment.log_path)
            segments.remove(segment)
            segment.delete()
    if not len(segments):
        segments.add(
            LogSegment(
                directory,
                initial_offset,
                config.index_interval_bytes,
                config.segment_index_bytes,
                active=True,
                created_ms=now_ms,
            )
        )
    for segment in segments.snapshot()[:-1]:
        segment.seal()  # trims indexes that a rebuild or recovery preallocated
    segments.active.make_active(config.segment_index_bytes)
    return segments


def _open_segment(directory: Path, base_offset: int, config: LogConfig, now_ms: int) -> LogSegment:
    segment = LogSegment(
        directory,
        base_offset,
        config.index_interval_bytes,
        config.segment_index_bytes,
        active=False,
        created_ms=now_ms,
    )
    try:
        if segment.indexes_consistent:
            segment.load()
            return segment
    except CorruptRecordError:
        pass
    log.warning("rebuilding indexes of %s", segment.log_path)
    try:
        segment.rebuild_indexes()
    except CorruptRecordError:
        segment.recover()
    return segment


def _recover_from(segments: LogSegments, recovery_point: int) -> None:
    """Re-validate from the segment holding ``recovery_point``; cut at the first bad byte.

    A segment that ends before its successor's base offset lost its tail (an OS crash
    can drop a rolled segment's unflushed pages while the next file survives), because
    the log keeps segments contiguous even across offset gaps (:mod:`log`). The one
    legitimate boundary gap is a roll forced by relative-offset overflow, whose base is
    exactly its first batch's last offset - MAX_RELATIVE_OFFSET (``Log._maybe_roll``).
    Each boundary is checked once both sides are validated.
    """
    to_check = segments.from_offset(recovery_point)
    for i, segment in enumerate(to_check):
        truncated = segment.recover()
        torn = i > 0 and not _follows(to_check[i - 1], segment)
        if torn:
            segment, truncated = to_check[i - 1], 0
            later_segments = to_check[i:]
        else:
            later_segments = to_check[i + 1 :]
        if truncated or torn:
            log.warning("truncated %d invalid bytes from %s", truncated, segment.log_path)
            for later in later_segments:
                log.warning("removing segment %s after a corrupt one", later.log_path)
                segments.remove(later)
                later.delete()
            return


def _follows(segment: LogSegment, successor: LogSegment) -> bool:
    """Whether ``successor`` starts where ``segment`` ends (both validated)."""
    if segment.next_offset == successor.base_offset:
        return True
    first = next(successor.iter_batches(0), None)
    return first is not None and successor.base_offset == first[1].last_offset - MAX_RELATIVE_OFFSET


def restore_leader_epochs(cache: LeaderEpochCache, segments: LogSegments,
                          recovery_point: int) -> None:
    """After an unclean shutdown, make the epoch cache agree with every batch from the
    recovery point on: its checkpoint is written in the background and may lag the log
    there, while below the recovery point it is durable (``Log.flush`` waits for it).
    Kafka re-assigns epochs the same way while it recovers segments."""
    for header in replay_headers(segments, recovery_point):
        cache.restore(header.partition_leader_epoch, header.base_offset)


# -- producer snapshots -----------------------------------------------------------------
SNAPSHOTS_KEPT = 2

def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / (segment_stem(offset) + SNAPSHOT_SUFFIX)


def snapshot_offsets(directory: Path) -> list[int]:
    return sorted(int(p.stem) for p in directory.glob("*" + SNAPSHOT_SUFFIX))


def write_snapshot(directory: Path, producers: ProducerStateManager, end: int) -> None:
    """Snapshot ``producers`` as of log end ``end`` (unless one exists) and keep only the
    newest ``SNAPSHOTS_KEPT``."""
    if end not in snapshot_offsets(directory):
        producers.write_snapshot(snapshot_path(directory, end))
    kept = set(snapshot_offsets(directory)[-SNAPSHOTS_KEPT:])
    delete_snapshots(directory, lambda offset: offset in kept)


def delete_snapshots(directory: Path, keep: Callable[[int], bool]) -> None:
    for offset in snapshot_offsets(directory):
        if not keep(offset):
            snapshot_path(directory, offset).unlink(missing_ok=True)


def load_producer_state(
    directory: Path, segments: LogSegments, log_end_offset: int,
    transactions: PartitionTransactions,
) -> ProducerStateManager:
    """The newest readable snapshot at or below the log end, then a replay of the batch
    headers after it. Snapshots above the log end describe data that is gone: deleted.

    The replay also rebuilds ``transactions`` from the snapshot on (its aborted index
    entries there are dropped and re-derived, then the index files are rewritten), so
    index appends lost in a crash come back."""
    delete_snapshots(directory, lambda offset: offset <= log_end_offset)
    state, start = ProducerStateManager(), segments.first.base_offset
    for offset in reversed(snapshot_offsets(directory)):
        try:
            state = ProducerStateManager.read_snapshot(snapshot_path(directory, offset))
        except ValueError as exc:
            log.warning("ignoring producer snapshot: %s", exc)
            continue
        start = offset
        break
    changed = transactions.forget_from(start)
    for segment in segments.from_offset(start):
        found = segment.find_batch(start)
        if found is None:
            continue
        for position, header in segment.iter_batches(found[0]):
            if header.base_offset < start:
                continue
            marker = None
            if header.is_control:
                marker = control_type(segment.read(position, CONTROL_PREFIX_BYTES))
            completed = state.update(header, marker)
            if completed is not None:
                transactions.completed(completed, segment.base_offset,
                                       state.open_transactions().values(), persist=False)
                changed = changed or completed.is_aborted
    if changed:
        transactions.rewrite([segment.base_offset for segment in segments.snapshot()])
    return state


def replay_headers(segments: LogSegments, start_offset: int) -> Iterator[BatchHeader]:
    """Headers of every batch whose base offset is >= ``start_offset``, in order."""
    for segment in segments.from_offset(start_offset):
        found = segment.find_batch(start_offset)
        if found is not None:
            for _, header in segment.iter_batches(found[0]):
                if header.base_offset >= start_offset:
                    yield header
