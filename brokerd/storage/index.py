"""The shared machinery of Kafka's two sparse, memory-mapped segment indexes.

An index file is a flat array of fixed-size big-endian entries sorted by its key. The
*active* segment's index is preallocated to ``segment.index.bytes`` (so appends never
grow the file) and trimmed to exactly ``entries * entry_size`` when the segment rolls or
the log closes. Indexes are hints, not data: they are not checksummed and are rebuilt
from the ``.log`` whenever they look wrong, so the only invariant loading relies on is

    valid index  <=>  file length == (length of the strictly increasing entry prefix) * size

An untrimmed (crashed) or zero-filled or torn file fails that test and the owner rebuilds
it. Thread-safety: not thread-safe; the owning log mutates it from one thread. ``flush``
may run in a flush worker while that thread appends: msync of a mapping that is being
written is safe, and if a resize unmaps it meanwhile, ``flush`` raises ValueError (closed
mmap), which is harmless because :meth:`resize` flushes before it unmaps.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path


class MappedIndex:
    """A sorted array of ``ENTRY`` structs in a memory-mapped file (see the module doc)."""

    ENTRY: struct.Struct  # set by each subclass

    def __init__(self, path: Path, base_offset: int, max_index_size: int, preallocate: bool):
        self.path = path
        self.base_offset = base_offset
        self._entry_size = self.ENTRY.size
        self._max_entries = max_index_size // self._entry_size
        self._mm: mmap.mmap | None = None
        existed = path.exists()
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            length = os.fstat(fd).st_size
            if length:
                self._mm = mmap.mmap(fd, length)
        finally:
            os.close(fd)
        self._entries = self._valid_prefix_length(length // self._entry_size)
        # A missing file is inconsistent too: its segment may hold data (a lost index).
        self.consistent = existed and length == self._entries * self._entry_size
        if preallocate:
            self.resize(self._max_entries * self._entry_size)

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
        assert self._mm is not None and 0 <= index < self._entries
        return self.ENTRY.unpack_from(self._mm, index * self._entry_size)

    def last_entry(self) -> tuple[int, ...] | None:
        return self.entry(self._entries - 1) if self._entries else None

    def _floor(self, key: int, strict: bool = False) -> int:
        """Index of the last entry whose first field is <= key (< key if strict), or -1.

        Classic binary search over the invariant ``entry(i)[0] <= key for i < lo`` and
        ``entry(i)[0] > key for i >= hi``; it ends with lo == hi, so the answer is lo - 1.
        """
        lo, hi = 0, self._entries
        while lo < hi:
            mid = (lo + hi) // 2
            first = self.entry(mid)[0]
            if first < key or (first == key and not strict):
                lo = mid + 1
            else:
                hi = mid
        return lo - 1

    # -- mutation -----------------------------------------------------------------------
    def _append_entry(self, *fields: int) -> None:
        if self._entries >= self._max_entries:
            raise OverflowError(f"index {self.path} is full ({self._entries} entries)")
        needed = (self._entries + 1) * self._entry_size
        if self._mm is None or len(self._mm) < needed:
            self.resize(max(needed, self._max_entries * self._entry_size))
        assert self._mm is not None
        self.ENTRY.pack_into(self._mm, self._entries * self._entry_size, *fields)
        self._entries += 1

    def truncate_entries(self, count: int) -> None:
        """Keep the first ``count`` entries and zero the rest, so a crash cannot resurrect
        dropped entries as a seemingly valid prefix."""
        if count >= self._entries:
            return
        assert self._mm is not None
        start, end = count * self._entry_size, self._entries * self._entry_size
        self._mm[start:end] = bytes(end - start)
        self._entries = count
        self.consistent = True

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self.truncate_entries(0)
        self.consistent = True

    def resize(self, size: int) -> None:
        """Make the file exactly ``size`` bytes (never below the live entries)."""
        size = max(size, self._entries * self._entry_size)
        if self._mm is not None and len(self._mm) == size:
            return
        if self._mm is not None:
            self._mm.flush()
            self._mm.close()
            self._mm = None
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, size)
            if size:
                self._mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)

    def trim(self) -> None:
        """Shrink the file to its live entries (on roll and close)."""
        self.resize(self._entries * self._entry_size)

    def flush(self) -> None:
        mm = self._mm
        if mm is not None:
            mm.flush()

    def close(self) -> None:
        """Trim and unmap; the file stays."""
        self.trim()
        if self._mm is not None:
            self._mm.close()
            self._mm = None

    def rename(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        self.path.unlink(missing_ok=True)

    def _valid_prefix_length(self, candidates: int) -> int:
        previous: tuple[int, ...] | None = None
        for i in range(candidates):
            assert self._mm is not None
            entry = self.ENTRY.unpack_from(self._mm, i * self._entry_size)
            if not self._is_successor(previous, entry):
                return i
            previous = entry
        return candidates
