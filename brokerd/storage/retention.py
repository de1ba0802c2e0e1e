"""Retention by size as a segment predicate (pure): the log deletes its oldest segments
while this says so (see ``Log.enforce_retention``)."""

from __future__ import annotations

from collections.abc import Callable

from brokerd.storage.segment import LogSegment


def beyond_size(excess: int) -> Callable[[LogSegment, int], bool]:
    """retention.bytes, oldest segment first: delete one while the log stays at or above
    the limit without it (``excess``: bytes above the limit now)."""
    def delete(segment: LogSegment, _: int) -> bool:
        nonlocal excess
        if segment.size > excess:
            return False
        excess -= segment.size
        return True
    return delete
