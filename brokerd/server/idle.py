"""``IdleSchedule``: which connections have been silent since a cutoff, without looking at
every connection on every check.

Why: ``connections.max.idle.ms`` is checked every second, and a broker holds thousands of
mostly idle connections; a scan of all of them each second is CPU spent on nothing.

How: connections stamp ``last_active`` (monotonic seconds) on every read and response and
never tell the schedule, so the request path stays one attribute store.  The schedule is a
heap of (stamp as last seen, sequence, member) whose top can go idle first.  Invariant: an
entry's stamp is never later than its member's current stamp (stamps only grow), so a
member whose entry is not yet below the cutoff cannot be idle either.  A check pops the
entries below the cutoff: a member active since then is pushed back with its new stamp,
the others are idle.  A check where nothing is due costs O(1), and each member is looked
at about once per idle period plus once when it goes idle (Kafka's selector gets the same
from an access-ordered map, at the price of touching the map on every read).

Removed members leave their entries behind until popped; once stale entries outnumber
live ones the heap is rebuilt, so churn never keeps many closed connections referenced.

Not thread-safe: the loop thread only.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable, KeysView
from typing import Generic, TypeVar

Member = TypeVar("Member", bound=Hashable)

# Rebuild when the heap holds more than twice the live members plus this slack (the slack
# keeps a small schedule from rebuilding on every removal).
_REBUILD_SLACK = 64


class IdleSchedule(Generic[Member]):
    """The live members and when each can go idle first; ``stamp(member)`` reads its
    last-activity time."""

    def __init__(self, stamp: Callable[[Member], float]) -> None:
        self._stamp = stamp
        self._sequence = itertools.count()
        self._heap: list[tuple[float, int, Member]] = []
        self._live: dict[Member, int] = {}  # member -> sequence of its current heap entry

    def __len__(self) -> int:
        return len(self._live)

    def members(self) -> KeysView[Member]:
        """The live members (a view: it follows later changes)."""
        return self._live.keys()

    def add(self, member: Member) -> None:
        self._push(member, self._stamp(member))

    def discard(self, member: Member) -> None:
        """Forget ``member`` (closed); a no-op if it is not live."""
        if self._live.pop(member, None) is not None and (
                len(self._heap) > 2 * len(self._live) + _REBUILD_SLACK):
            self._rebuild()

    def pop_idle(self, cutoff: float) -> list[Member]:
        """The members whose stamp is earlier than ``cutoff``, each returned once: they
        stay members, unscheduled, until :meth:`discard` (the caller closes them, and a
        closed connection is discarded when its transport is gone)."""
        idle: list[Member] = []
        while self._heap and self._heap[0][0] < cutoff:
            _, sequence, member = heapq.heappop(self._heap)
            if self._live.get(member) != sequence:
                continue  # removed, or superseded by a later entry
            stamp = self._stamp(member)
            if stamp < cutoff:
                idle.append(member)
            else:
                self._push(member, stamp)
        return idle

    def _push(self, member: Member, stamp: float) -> None:
        sequence = next(self._sequence)
        self._live[member] = sequence
        heapq.heappush(self._heap, (stamp, sequence, member))

    def _rebuild(self) -> None:
        self._heap = [(self._stamp(member), sequence, member)
                      for member, sequence in self._live.items()]
        heapq.heapify(self._heap)
