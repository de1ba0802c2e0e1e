"""``LogSegments``: a partition's segments sorted by base offset, and nothing else.

Not thread-safe: the owning :class:`~brokerd.storage.local_log.LocalLog` mutates it from
one thread. A flush worker only iterates a snapshot taken with :meth:`snapshot`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from brokerd.storage.segment import LogSegment


class LogSegments:
    """Segments keyed by base offset; the last one is the active (appendable) segment."""

    def __init__(self) -> None:
        self._bases: list[int] = []
        self._segments: list[LogSegment] = []

    def __len__(self) -> int:
        return len(self._segments)

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self._segments)

    def snapshot(self) -> list[LogSegment]:
        return list(self._segments)

    def add(self, segment: LogSegment) -> None:
        i = bisect.bisect_left(self._bases, segment.base_offset)
        if i < len(self._bases) and self._bases[i] == segment.base_offset:
            raise ValueError(f"duplicate segment base offset {segment.base_offset}")
        self._bases.insert(i, segment.base_offset)
        self._segments.insert(i, segment)

    def remove(self, segment: LogSegment) -> None:
        i = self._bases.index(segment.base_offset)
        del self._bases[i]
        del self._segments[i]

    @property
    def first(self) -> LogSegment:
        return self._segments[0]

    @property
    def active(self) -> LogSegment:
        return self._segments[-1]

    def floor(self, offset: int) -> LogSegment | None:
        """The segment with the largest base offset <= ``offset`` (the one holding it)."""
        i = bisect.bisect_right(self._bases, offset) - 1
        return self._segments[i] if i >= 0 else None

    def from_offset(self, offset: int) -> list[LogSegment]:
        """The segment holding ``offset`` and every later one."""
        start = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        return self._segments[start:]

    def at_or_above(self, offset: int) -> list[LogSegment]:
        """Segments whose base offset is >= ``offset``."""
        return self._segments[bisect.bisect_left(self._bases, offset) :]

    def next_base_after(self, segment: LogSegment) -> int | None:
        i = bisect.bisect_right(self._bases, segment.base_offset)
        return self._bases[i] if i < len(self._bases) else None

    @property
    def size_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)
