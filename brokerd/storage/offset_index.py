"""``OffsetIndex``: the ``.index`` file mapping offsets to byte positions in a segment.

On-disk format: entries of ``>II`` = (offset - base_offset, byte position in ``.log``),
8 bytes each, strictly increasing in both fields. An entry for a batch's *base offset*
is written when more than ``index.interval.bytes`` have been appended since the previous
entry, so a lookup lands at most one interval (plus one batch) before its target and a
segment's first batch (position 0) is never indexed: a zero position marks padding.
Rebuilt on crash, not checksummed. Not thread-safe (see :mod:`brokerd.storage.index`).
"""

from __future__ import annotations

import struct

from brokerd.storage.index import MappedIndex

# Offsets are stored relative to the segment's base offset in an unsigned 32-bit field;
# the log rolls a new segment before any offset would overflow it.
MAX_RELATIVE_OFFSET = 2**31 - 1


class OffsetIndex(MappedIndex):
    """Sparse offset -> position index of one segment."""

    ENTRY = struct.Struct(">II")

    def _is_successor(self, previous: tuple[int, ...] | None, entry: tuple[int, ...]) -> bool:
        relative, position = entry
        if previous is None:
            return position > 0
        return relative > previous[0] and position > previous[1]

    @property
    def last_offset(self) -> int:
        """The largest indexed offset (the base offset when empty)."""
        last = self.last_entry()
        return self.base_offset + last[0] if last else self.base_offset

    def append(self, offset: int, position: int) -> None:
        """Index the batch starting at ``offset`` at byte ``position``; both must grow."""
        relative = offset - self.base_offset
        last = self.last_entry()
        if last is not None and (relative <= last[0] or position <= last[1]):
            raise ValueError(f"index entry ({offset}, {position}) does not follow {last}")
        self._append_entry(relative, position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry at or before ``offset``, else (base, 0):
        every batch holding an offset >= the answer's offset starts at or after its position.
        """
        i = self._floor(offset - self.base_offset)
        if i < 0:
            return self.base_offset, 0
        relative, position = self.entry(i)
        return self.base_offset + relative, position

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= ``offset``."""
        self.truncate_entries(self._floor(offset - self.base_offset, strict=True) + 1)
