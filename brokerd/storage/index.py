"""The shared machinery of Kafka's two sparse, memory-mapped segment indexes.

An index file is a flat array of fixed-size big-endian entries sorted by its key. The
*active* segment's index is preallocated to ``segment.index.bytes`` (so appends never
grow the file) and trimmed to exactly ``entries * entry_size`` when the segment rolls or
the log closes. Indexes are hints, not data: they are not checksummed and are rebuilt
from the ``.log`` whenever they look wrong, so the only invariant loading relies on is

    valid index  <=>  file length == (length of the strictly increasing entry prefix) * size

An untrimmed (crashed) or zero-filled or torn file fails that test and the owner rebuilds
it.

The mapping is lazy (Kafka's ``LazyIndex``): an index is a
:class:`~brokerd.storage.file_cache.CachedFile`, mapped on first use and unmapped when the
process's open-file cache needs the room, so an idle segment's indexes hold neither a
mapping nor (Python's ``mmap`` keeps one) a descriptor. Every access to the mapping is
pinned, except an append by the writer that holds the index (the active segment's, see
:meth:`~brokerd.storage.segment.LogSegment.append`), and the entry count and file length
are kept in memory, so queries about them map nothing. Unmapping does not write back:
dirty pages stay in the page cache and :meth:`flush` (``msync``, which syncs the file
range whichever mapping dirtied it) maps the index again only if it was written since
the last flush.

Thread-safety: not thread-safe; the owning log mutates it from one thread. ``flush``
may run in a flush worker while that thread appends: msync of a mapping that is being
written is safe, and if a resize unmaps it meanwhile, ``flush`` raises ValueError (closed
mmap), which is harmless because :meth:`resize` flushes before it unmaps whatever that
flush had not finished.  Writes are counted and a flush records the count it made
durable only once its msync returned, so both know what is still unsynced: a resize of an
index with nothing unsynced (every idle log's two, at a clean shutdown) syncs nothing.
That msync of a preallocated file cost about 0.5 ms (3,000 fresh logs closed: 1.8-3.1 s
of msync), on the order of 30 s for a broker closing 30,000 logs.  The resize still maps
an unmapped index to trim it (see ``resize``).
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

from brokerd.storage.file_cache import OPEN_FILES, CachedFile, OpenFileCache


def _map(fd: int, length: int) -> mmap.mmap:
    """Map an index for random access: a fault reads only its page.  Why: by default a
    fault reads around it as far as the device's read-ahead (8 MiB on this project's
    virtual disks), so the first look at a crashed broker's preallocated 10 MB index
    filled megabytes of page cache with its zeros: 10-21 ms per empty log at restart
    after kill -9, 0.9-1.1 ms with this (``bench.crash_restart_load``)."""
    mapping = mmap.mmap(fd, length)
    mapping.madvise(mmap.MADV_RANDOM)
    return mapping


class MappedIndex(CachedFile):
    """A sorted array of ``ENTRY`` structs in a lazily memory-mapped file (module doc);
    ``with index as mapping:`` pins the mapping (None while the file is empty)."""

    ENTRY: struct.Struct  # set by each subclass

    def __init__(self, path: Path, base_offset: int, max_index_size: int, preallocate: bool,
                 cache: OpenFileCache = OPEN_FILES):
        super().__init__(path, cache)
        self.base_offset = base_offset
        self._entry_size = self.ENTRY.size
        self._max_entries = max_index_size // self._entry_size
        self._mm: mmap.mmap | None = None
        self._length = 0  # the file's length (only this object changes it)
        self._writes = 0  # entries written or cleared, counted
        self._synced_writes = 0  # the count the last completed msync made durable
        # The last entry, remembered: every append compares with it, and reading it from
        # the mapping costs a pin of the cached file (see file_cache) each time.
        self._last: tuple[int, ...] | None = None
        existed = path.exists()
        with self as mapping:
            self._entries = self._valid_prefix_length(mapping, self._length // self._entry_size)
        # A missing file is inconsistent too: its segment may hold data (a lost index).
        self.consistent = existed and self._length == self._entries * self._entry_size
        if preallocate:
            self.resize(self._max_entries * self._entry_size)

    # -- the cache's hooks --------------------------------------------------------------
    def open_now(self) -> None:
        fd = self.open_descriptor()
        try:
            self._length = os.fstat(fd).st_size
            if self._length:
                self._mm = _map(fd, self._length)
        finally:
            os.close(fd)

    def close_now(self) -> None:
        mm, self._mm = self._mm, None
        if mm is not None:
            mm.close()

    def handle(self) -> mmap.mmap | None:
        return self._mm

    # -- subclass hook ------------------------------------------------------------------
    def _is_successor(self, previous: tuple[int, ...] | None, entry: tuple[int, ...]) -> bool:
        """Whether ``entry`` may follow ``previous`` (None for the first entry)."""
        raise NotImplementedError

    # -- queries ------------------------------------------------------------------------
    @property
    def entries(self) -> int:
        return self._entries

    @property
    def is_full(self) -> bool:
        return self._entries >= self._max_entries

    def entry(self, index: int) -> tuple[int, ...]:
        with self as mapping:
            return self._entry(mapping, index)

    def _entry(self, mapping: mmap.mmap | None, index: int) -> tuple[int, ...]:
        assert mapping is not None and 0 <= index < self._entries
        return self.ENTRY.unpack_from(mapping, index * self._entry_size)

    def last_entry(self) -> tuple[int, ...] | None:
        if not self._entries:
            return None
        if self._last is None:
            self._last = self.entry(self._entries - 1)
        return self._last

    def _floor(self, key: int, strict: bool = False) -> int:
        """Index of the last entry whose first field is <= key (< key if strict), or -1.

        Classic binary search over the invariant ``entry(i)[0] <= key for i < lo`` and
        ``entry(i)[0] > key for i >= hi``; it ends with lo == hi, so the answer is lo - 1.
        """
        lo, hi = 0, self._entries
        if not hi:
            return -1
        with self as mapping:
            while lo < hi:
                mid = (lo + hi) // 2
                first = self._entry(mapping, mid)[0]
                if first < key or (first == key and not strict):
                    lo = mid + 1
                else:
                    hi = mid
        return lo - 1

    # -- mutation -----------------------------------------------------------------------
    def _append_entry(self, *fields: int) -> None:
        if self._entries >= self._max_entries:
            raise OverflowError(f"index {self.path} is full ({self._entries} entries)")
        if self.held:  # the writer's hold keeps it mapped (see file_cache)
            self._write_entry(fields)
        else:
            with self:
                self._write_entry(fields)
        self._entries += 1
        self._last = fields
        self._writes += 1

    def _write_entry(self, fields: tuple[int, ...]) -> None:
        position = self._entries * self._entry_size
        needed = position + self._entry_size
        if self._length < needed:
            self.resize(max(needed, self._max_entries * self._entry_size))
        if (needed - 1) // mmap.PAGESIZE != (position - 1) // mmap.PAGESIZE:
            self._allocate(position, needed)
        assert self._mm is not None
        self.ENTRY.pack_into(self._mm, position, *fields)

    def _allocate(self, start: int, end: int) -> None:
        """Give the bytes ``[start, end)`` of the (sparse, preallocated by length only) file
        their disk blocks before the mapping first writes a page of them.  Why: a store
        into a page the filesystem cannot back is not an error return but SIGBUS, which
        killed the broker when a log dir filled up; allocated first, a full disk is an
        ENOSPC ``OSError`` here, and the log dir goes offline like any failed write."""
        fd = self.open_descriptor()
        try:
            os.posix_fallocate(fd, start, end - start)
        finally:
            os.close(fd)

    def truncate_entries(self, count: int) -> None:
        """Keep the first ``count`` entries and zero the rest, so a crash cannot resurrect
        dropped entries as a seemingly valid prefix."""
        if count >= self._entries:
            return
        start, end = count * self._entry_size, self._entries * self._entry_size
        with self as mapping:
            assert mapping is not None
            mapping[start:end] = bytes(end - start)
        self._entries = count
        self._last = None
        self._writes += 1
        self.consistent = True

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self.truncate_entries(0)
        self.consistent = True

    def resize(self, size: int) -> None:
        """Make the file ``size`` bytes rounded down to whole entries (never below the live
        entries), as Kafka's ``AbstractIndex.resize`` does.  Why round: the active segment
        asks for ``segment.index.bytes``, which 12-byte time-index entries do not divide;
        unrounded, every new log's time index was preallocated to the rounded size and then
        remapped to the exact one, with an msync that fsyncs the just-resized file (a
        quarter of a broker's CPU samples while it created 10,000 replicas' logs)."""
        size = max(size - size % self._entry_size, self._entries * self._entry_size)
        if self._length == size:
            return
        with self:
            if self._mm is not None:
                written = self._writes
                if written != self._synced_writes:
                    self._mm.flush()
                    self._synced_writes = written
                self._mm.close()
                self._mm = None
            fd = os.open(self.path, os.O_RDWR)
            try:
                os.ftruncate(fd, size)
                self._length = size
                if size:
                    self._mm = _map(fd, size)
            finally:
                os.close(fd)

    def trim(self) -> None:
        """Shrink the file to its live entries (on roll and close)."""
        self.resize(self._entries * self._entry_size)

    def flush(self) -> None:
        """msync what was written since the last flush (nothing, if nothing was)."""
        written = self._writes  # first: a write racing this msync stays unsynced
        if written == self._synced_writes:
            return
        with self as mapping:
            if mapping is not None:
                mapping.flush()
        self._synced_writes = written

    def close(self) -> None:
        """Trim and unmap; the file stays."""
        self.trim()
        self.retire()

    def delete(self) -> None:
        self.retire()
        self.path.unlink(missing_ok=True)

    def _valid_prefix_length(self, mapping: mmap.mmap | None, candidates: int) -> int:
        previous: tuple[int, ...] | None = None
        for i in range(candidates):
            assert mapping is not None
            entry = self.ENTRY.unpack_from(mapping, i * self._entry_size)
            if not self._is_successor(previous, entry):
                return i
            previous = entry
        return candidates
