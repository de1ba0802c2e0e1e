"""``LogSegment``: one ``.log`` file of record batches plus its offset and time indexes.

On-disk format: ``<base offset, 20 digits>.log`` is a plain concatenation of RecordBatch
v2 batches exactly as produced, each with its final base offset and partition leader
epoch patched into the header; ``.index`` and ``.timeindex`` of the same stem are the
sparse indexes (:mod:`offset_index`, :mod:`time_index`). The segment's *size* is the
committed length: bytes beyond it (a torn write before a crash) are never read and are
cut off by :meth:`recover`.

A segment's files may carry one extra suffix while it is not (yet, or any more) part of
the log: ``.cleaned`` (the cleaner's output being written), ``.swap`` (cleaned output
about to replace its source segments) and ``.deleted`` (waiting for
``file.delete.delay.ms``); :meth:`change_suffix` renames all three files at once.

Descriptors: the ``.log`` file is opened on demand and both indexes are mapped on demand
through the process's open-file cache (:mod:`file_cache`), so an idle segment may hold
none; every use pins what it touches, and :meth:`region` hands out file regions that keep
the descriptor open until they are dropped (a fetch response being written). The writer
is the exception: :meth:`append` *holds* all three files (pinned for the appending
thread until its sweep finds them unused, or until :meth:`seal`), so a run of appends
costs no pin each.

Thread-safety: not thread-safe, except that :meth:`flush` may run in a flush worker
thread while the owning thread appends (fsync and pwrite on one fd are independent).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from brokerd.protocol import ProtocolError
from brokerd.protocol.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    parse_batch_header,
    validate_batch,
)
from brokerd.storage.errors import CorruptRecordError
from brokerd.storage.file_cache import OPEN_FILES, FilePin, OpenFileCache, SegmentFile
from brokerd.storage.offset_index import MAX_RELATIVE_OFFSET, OffsetIndex
from brokerd.storage.results import FileRegion
from brokerd.storage.time_index import TimeIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"

# Header scans read this much at a time: one pread covers dozens of small batches' headers.
_SCAN_CHUNK = 16 * 1024


# How many of the newest batches the active segment keeps the positions and headers of
# (see ``LogSegment._recent``): a tailing reader is rarely more than a few batches behind.
RECENT_BATCHES = 8


def segment_stem(base_offset: int) -> str:
    """Kafka's file name stem: the base offset, zero-padded to 20 digits."""
    return f"{base_offset:020d}"


def iter_file_batches(
    fd: int, position: int, end: int, name: object
) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each batch in file ``fd`` from ``position`` (a batch start)
    to ``end``; ``name`` labels errors. Trusts CRCs (see :meth:`LogSegment.recover`) but
    raises CorruptRecordError for a length that runs past ``end`` or a file shorter than
    ``end`` (truncated under the reader)."""
    chunk, chunk_position = b"", position
    while position + BATCH_HEADER_SIZE <= end:
        at = position - chunk_position
        if at + BATCH_HEADER_SIZE > len(chunk):
            chunk, chunk_position, at = os.pread(fd, _SCAN_CHUNK, position), position, 0
            if len(chunk) < BATCH_HEADER_SIZE:
                raise CorruptRecordError(f"{name}: file ends inside the batch at {position}")
        header = parse_batch_header(chunk, at)
        if header.size_in_bytes < BATCH_HEADER_SIZE or position + header.size_in_bytes > end:
            raise CorruptRecordError(f"{name}: bad batch length at {position}")
        yield position, header
        position += header.size_in_bytes


class LogSegment:
    """One segment; ``size`` bytes of trusted batches starting at ``base_offset``."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        index_interval_bytes: int,
        max_index_size: int,
        active: bool,
        created_ms: int,
        suffix: str = "",
        files: OpenFileCache = OPEN_FILES,
    ) -> None:
        stem = segment_stem(base_offset)
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.suffix = suffix
        self._file = SegmentFile(directory / (stem + LOG_SUFFIX + suffix), files)
        with self._file as fd:
            self.size = os.fstat(fd).st_size
        self.offset_index = OffsetIndex(
            directory / (stem + INDEX_SUFFIX + suffix), base_offset, max_index_size, active,
            files,
        )
        self.time_index = TimeIndex(
            directory / (stem + TIME_INDEX_SUFFIX + suffix), base_offset, max_index_size, active,
            files,
        )
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self._bytes_since_index_entry = 0
        # (position, header) of the newest batches, in file order: a follower's or
        # tailing consumer's fetch asks for them, found and walked here without an index
        # lookup or reading their headers back from the file.  A list (an empty deque
        # costs 760 bytes, on each of tens of thousands of idle replicas); a sealed
        # segment keeps only its last batch.
        self._recent: list[tuple[int, BatchHeader]] = []
        # Segment age for segment.ms: wall-clock creation time, or for a loaded segment its
        # first batch's timestamp (our own writes; a restart must not reset the age).
        self.created_ms = created_ms

    # -- state --------------------------------------------------------------------------
    @property
    def log_path(self) -> Path:
        return self._file.path

    @property
    def indexes_consistent(self) -> bool:
        return self.offset_index.consistent and self.time_index.consistent

    def is_full(self) -> bool:
        return self.offset_index.is_full or self.time_index.is_full

    def can_hold_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= MAX_RELATIVE_OFFSET

    def load(self) -> None:
        """Derive next offset, max timestamp and age after opening a trusted segment;
        raises CorruptRecordError when an index points past the data (then rebuild).

        Only the tail after the last offset-index entry is scanned (Kafka's
        ``readNextOffset``); the time index's last entry is exact for a segment closed by
        us, and the scan covers whatever came after it. A tail long enough to have earned
        another index entry means entries were lost, which is also corruption.
        """
        self.max_timestamp = self.time_index.max_timestamp
        last = self.time_index.last_entry()
        self.offset_of_max_timestamp = self.base_offset + last[1] if last else self.base_offset
        offset, position = self.offset_index.lookup(self.offset_index.last_offset)
        if position > self.size:
            raise CorruptRecordError(f"{self.offset_index.path} points past the end of the log")
        self.next_offset = offset
        self._bytes_since_index_entry = 0
        self._recent.clear()
        for batch_position, header in self.iter_batches(position):
            if batch_position != position and self._needs_index_entry():
                raise CorruptRecordError(f"{self.offset_index.path} lacks entries (truncated?)")
            self._bytes_since_index_entry += header.size_in_bytes
            self._track(batch_position, header)
        if self.offset_of_max_timestamp >= max(self.next_offset, self.base_offset + 1):
            raise CorruptRecordError(f"{self.time_index.path} points past the end of the log")
        first = next(self.iter_batches(0), None)
        if first is not None and first[1].max_timestamp >= 0:
            self.created_ms = first[1].max_timestamp

    def _track(self, position: int, header: BatchHeader) -> None:
        recent = self._recent
        recent.append((position, header))
        if len(recent) > RECENT_BATCHES:
            del recent[0]
        self.next_offset = header.last_offset + 1
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.base_offset

    # -- append -------------------------------------------------------------------------
    def append(self, data: bytes | bytearray | memoryview, batches: list[BatchHeader]) -> None:
        """Write ``data`` (the concatenation of ``batches``, offsets final) at the end.

        An index entry is added for a batch once more than ``index.interval.bytes`` were
        written since the previous entry; it is added before the batch is counted, so the
        entry's position is the batch's own start.
        """
        position = self.size
        for held in (self._file, self.offset_index, self.time_index):
            held.hold()
        if self._file.held:
            written = os.pwrite(self._file.fd, data, position)
        else:  # the cache grants no more holds (half its budget is held): pin this write
            with self._file as fd:
                written = os.pwrite(fd, data, position)
        if written != len(data):
            raise OSError(f"short write to {self.log_path}: {written} of {len(data)} bytes")
        for header in batches:
            self._index_batch(position, header)
            position += header.size_in_bytes
        self.size = position

    def _needs_index_entry(self) -> bool:
        return self._bytes_since_index_entry > self.index_interval_bytes

    def _index_batch(self, position: int, header: BatchHeader) -> None:
        # The log rolls before an index fills; should one record set still fill it, the
        # remaining batches go unindexed (lookups scan further) rather than failing.
        if self._needs_index_entry() and not self.is_full():
            self.offset_index.append(header.base_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index_entry = 0
        self._bytes_since_index_entry += header.size_in_bytes
        self._track(position, header)

    # -- reads --------------------------------------------------------------------------
    def iter_batches(
        self, position: int, end: int | None = None
    ) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each trusted batch from ``position`` (a batch start) to
        ``end`` (default: the committed size)."""
        end = self.size if end is None else end
        recent = self._recent_from(position, end)
        return iter(recent) if recent is not None else self._pinned_batches(position, end)

    def _recent_from(self, position: int, end: int) -> list[tuple[int, BatchHeader]] | None:
        """The batches from ``position`` to ``end`` if ``position`` starts one of the
        recent batches (they reach the end of the segment); None otherwise."""
        taken = []
        for entry in reversed(self._recent):
            start = entry[0]
            if start + entry[1].size_in_bytes <= end:
                taken.append(entry)
            if start == position:
                taken.reverse()
                return taken
            if start < position:
                return None
        return None

    def _pinned_batches(self, position: int, end: int) -> Iterator[tuple[int, BatchHeader]]:
        with self._file as fd:  # unpinned when the iteration ends or is dropped
            yield from iter_file_batches(fd, position, end, self.log_path)

    def find_batch(self, offset: int) -> tuple[int, BatchHeader] | None:
        """The first batch whose last offset is >= ``offset`` (the batch holding it, or the
        next one), found among the recent batches or via the index and a short forward scan."""
        recent = self._recent
        if recent and recent[0][1].base_offset <= offset <= recent[-1][1].last_offset:
            for found in recent:
                if found[1].last_offset >= offset:
                    return found
        _, position = self.offset_index.lookup(offset)
        for found in self.iter_batches(position):
            if found[1].last_offset >= offset:
                return found
        return None

    def find_timestamp(self, timestamp: int) -> BatchHeader | None:
        """The first batch whose max timestamp is >= ``timestamp``."""
        _, position = self.offset_index.lookup(self.time_index.offset_before(timestamp))
        for _, header in self.iter_batches(position):
            if header.max_timestamp >= timestamp:
                return header
        return None

    def read(self, position: int, nbytes: int) -> bytes:
        with self._file as fd:
            return os.pread(fd, nbytes, position)

    def region(self, position: int, nbytes: int) -> FileRegion:
        """``nbytes`` at ``position`` as a region whose descriptor stays open while the
        region lives (for sendfile after the read returned)."""
        pin = FilePin(self._file)
        return FileRegion(self._file.fd, position, nbytes, pin)

    def duplicate_descriptor(self) -> int:
        """A descriptor of the ``.log`` file of the caller's own (close it), for readers in
        other threads that must not depend on the cache (the cleaner's build)."""
        with self._file as fd:
            return os.dup(fd)

    # -- recovery and truncation --------------------------------------------------------
    def rebuild_indexes(self) -> None:
        """Recreate both indexes from the (trusted) batch headers."""
        self._reset_tracking()
        for position, header in self.iter_batches(0):
            self._index_batch(position, header)

    def recover(self) -> int:
        """Re-validate every batch (length, magic, CRC32C, increasing offsets that fit the
        segment), rebuild the indexes, and cut the file at the first invalid batch.
        Returns the bytes cut."""
        with self._file as fd:
            return self._recover(fd)

    def _recover(self, fd: int) -> int:
        self._reset_tracking()
        file_size = os.fstat(fd).st_size
        position = 0
        while position + BATCH_HEADER_SIZE <= file_size:
            raw = os.pread(fd, BATCH_HEADER_SIZE, position)
            try:
                header = parse_batch_header(raw, 0)
                size = header.size_in_bytes
                if size < BATCH_HEADER_SIZE or position + size > file_size:
                    break
                if header.base_offset < self.next_offset:
                    break
                if not self.can_hold_offset(header.last_offset):
                    break
                validate_batch(os.pread(fd, size, position), 0, header)
            except ProtocolError:
                break
            self._index_batch(position, header)
            position += size
        self.size = position
        truncated = file_size - position
        if truncated:
            os.ftruncate(fd, position)
        return truncated

    def _reset_tracking(self) -> None:
        self.offset_index.reset()
        self.time_index.reset()
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = self.base_offset
        self._bytes_since_index_entry = 0
        self._recent.clear()

    def truncate_to(self, offset: int) -> int:
        """Drop every batch whose last offset is >= ``offset``; returns the bytes dropped.

        A batch straddling ``offset`` goes entirely, so the new end is a batch boundary.
        """
        found = self.find_batch(offset)
        if found is None:
            return 0
        position, header = found
        self.offset_index.truncate_to(header.base_offset)
        self.time_index.truncate_to(header.base_offset)
        dropped = self.size - position
        with self._file as fd:
            os.ftruncate(fd, position)
        self.size = position
        self.load()
        return dropped

    # -- lifecycle ----------------------------------------------------------------------
    def make_active(self, max_index_size: int) -> None:
        """Preallocate the indexes again (after a truncation made this the last segment)."""
        self.offset_index.resize(max_index_size)
        self.time_index.resize(max_index_size)

    def seal(self) -> None:
        """Called when the segment stops being active: record its exact max timestamp in
        the time index (always possible: the time index reserves a slot for it), trim
        both index files to their entries, and release the writer's holds."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(
                self.max_timestamp, self.offset_of_max_timestamp, final=True
            )
        self.offset_index.trim()
        self.time_index.trim()
        for held in (self._file, self.offset_index, self.time_index):
            held.release()
        del self._recent[:-1]  # no reader tails a sealed segment

    def flush(self) -> None:
        """fsync the data and msync the indexes (safe in a worker thread, see module doc)."""
        with self._file as fd:
            os.fsync(fd)
        self.offset_index.flush()
        self.time_index.flush()

    def largest_timestamp_ms(self) -> int:
        """For time retention: the max batch timestamp, else the file's modification time."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return int(os.stat(self.log_path).st_mtime * 1000)

    def close(self) -> None:
        self.seal()
        self.offset_index.close()
        self.time_index.close()
        self._file.retire()

    def mark_deleted(self) -> None:
        """Rename the files to ``*.deleted`` so a restart drops them; readers holding a
        :class:`FileRegion` of this segment keep working until :meth:`delete`."""
        self.change_suffix(DELETED_SUFFIX)

    def change_suffix(self, suffix: str) -> None:
        """Rename the three files from the current extra suffix to ``suffix`` (open
        descriptors and mappings stay valid). The indexes go first and the ``.log`` last:
        loading keys a segment's state on its ``.log`` name and rebuilds indexes."""

        def renamed(path: Path) -> Path:
            return path.with_name(path.name.removesuffix(self.suffix) + suffix)

        for index in (self.offset_index, self.time_index):
            index.rename(renamed(index.path))
        self._file.rename(renamed(self.log_path))
        self.suffix = suffix

    def discard(self) -> None:
        """Release the files without trimming, syncing or unlinking anything: the whole
        partition directory is being removed."""
        for held in (self._file, self.offset_index, self.time_index):
            held.retire()

    def delete(self) -> None:
        self.offset_index.delete()
        self.time_index.delete()
        self._file.retire()
        self.log_path.unlink(missing_ok=True)
