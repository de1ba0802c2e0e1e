"""``TimeIndex``: the ``.timeindex`` file mapping timestamps to offsets in a segment.

On-disk format: entries of ``>qI`` = (max timestamp so far in the segment, offset of the
first batch that reached it - base_offset), 12 bytes each, timestamps strictly increasing
and offsets non-decreasing. Entries are written at the same ``index.interval.bytes``
rhythm as the offset index and once more when the segment stops being active, so the
last entry always carries the segment's largest timestamp. Because each entry names the
*first* batch reaching that maximum, every batch before it has a smaller timestamp.
Rebuilt on crash, not checksummed. Not thread-safe (see :mod:`brokerd.storage.index`).
"""

from __future__ import annotations

import struct

from brokerd.storage.index import MappedIndex


class TimeIndex(MappedIndex):
    """Sparse max-timestamp -> offset index of one segment."""

    ENTRY = struct.Struct(">qI")

    def _is_successor(self, previous: tuple[int, ...] | None, entry: tuple[int, ...]) -> bool:
        if previous is None:
            return entry != (0, 0)  # all-zero is preallocation padding
        return entry[0] > previous[0] and entry[1] >= previous[1]

    @property
    def max_timestamp(self) -> int:
        """The largest indexed timestamp, or -1 when empty."""
        last = self.last_entry()
        return last[0] if last else -1

    @property
    def is_full(self) -> bool:
        """Full one entry early: the last slot is kept for the final entry of ``seal``."""
        return self._entries >= self._max_entries - 1

    def maybe_append(self, timestamp: int, offset: int, final: bool = False) -> None:
        """Add (timestamp, offset) unless it does not raise the indexed maximum; ``final``
        may use the reserved last slot."""
        last = self.last_entry()
        if last is not None and timestamp <= last[0]:
            return
        if self.is_full and not final:
            raise OverflowError(f"time index {self.path} is full")
        self._append_entry(timestamp, offset - self.base_offset)

    def offset_before(self, timestamp: int) -> int:
        """An offset such that every batch below it has max timestamp < ``timestamp``:
        the offset of the last entry with a smaller timestamp, else the base offset."""
        i = self._floor(timestamp, strict=True)
        return self.base_offset + self.entry(i)[1] if i >= 0 else self.base_offset

    def truncate_to(self, offset: int) -> None:
        """Drop entries pointing at offsets >= ``offset``."""
        keep = self._entries
        while keep and self.base_offset + self.entry(keep - 1)[1] >= offset:
            keep -= 1
        self.truncate_entries(keep)
