"""Fetch sessions (KIP-227): the broker-side cache of what each fetcher last asked for.

Why: a follower or consumer fetching thousands of partitions would otherwise name every
one of them in every request, and the broker would read, encode and answer every one of
them, idle or not.  With a session the broker remembers each partition's request
parameters, so an *incremental* request names only what changed (new fetch offset, new
partitions; removed ones in ``forgotten_topics_data``) and the response names only
partitions with something to say (see :meth:`CachedPartition.must_respond`).

Request metadata (``session_id``, ``session_epoch``), Kafka's rules:

- epoch -1 (FINAL): a sessionless full fetch; a non-zero ``session_id`` is closed;
- epoch 0 (INITIAL): a full fetch that creates a session when the cache has room (the
  response carries the new id, or 0); a non-zero ``session_id`` is closed first;
- epoch > 0 with id 0: INVALID_FETCH_SESSION_EPOCH;
- otherwise incremental: an unknown id is FETCH_SESSION_ID_NOT_FOUND, an epoch other than
  the session's INVALID_FETCH_SESSION_EPOCH; an accepted request advances the epoch once.
  A session left with no partitions is closed and the request answered sessionless.

The cache holds at most ``max.incremental.fetch.session.cache.slots`` sessions.  A new
session takes a slot, when full, from (Kafka's ``FetchSessionCache.tryEvict``):

1. the least recently used session, if unused for more than
   ``min.incremental.fetch.session.eviction.ms`` (stale);
2. else the least valuable evictable session, if the new one is at least as valuable.
   Value orders by (privileged, partition count, id): follower sessions (privileged) over
   consumers', bigger over smaller.  A privileged newcomer may evict any consumer session,
   and a follower session older than the eviction time; a consumer newcomer only sessions
   older than the eviction time.  Both membership and size are as of the session's last
   use (Kafka re-files a session only when it is touched).

Pure and I/O-free: time is passed in as ``now_ms``; the handler attaches callbacks
(:attr:`CachedPartition.binding`, :attr:`FetchSession.notify`) to bind sessions to
partitions.  Not thread-safe: the event loop thread only.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from enum import Enum
from typing import TYPE_CHECKING, Protocol

from brokerd.protocol import ErrorCode

if TYPE_CHECKING:
    from brokerd.protocol import bodies

Key = tuple[str, int]
INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1
# Kafka's defaults for max.incremental.fetch.session.cache.slots and
# min.incremental.fetch.session.eviction.ms.
DEFAULT_CACHE_SLOTS = 1000
DEFAULT_EVICTION_MS = 120_000


class RequestKind(Enum):
    """What a Fetch request's session metadata asks for."""

    SESSIONLESS = "sessionless"  # FINAL epoch: full fetch, no session
    FULL = "full"  # INITIAL epoch: full fetch that may create a session
    INCREMENTAL = "incremental"


def classify(session_id: int, epoch: int) -> tuple[RequestKind, ErrorCode]:
    """The request kind, or the error that refuses it before any session lookup."""
    if epoch == FINAL_EPOCH:
        return RequestKind.SESSIONLESS, ErrorCode.NONE
    if epoch == INITIAL_EPOCH:
        return RequestKind.FULL, ErrorCode.NONE
    if session_id == INVALID_SESSION_ID:
        return RequestKind.INCREMENTAL, ErrorCode.INVALID_FETCH_SESSION_EPOCH
    return RequestKind.INCREMENTAL, ErrorCode.NONE


def next_epoch(epoch: int) -> int:
    """Epochs count 1, 2, … and wrap from the largest int32 back to 1 (0 means INITIAL)."""
    return 1 if epoch >= MAX_EPOCH else epoch + 1


class Binding(Protocol):
    """Whatever feeds a session partition's change notifications (the handler's)."""

    def release(self) -> None:
        """Stop notifying: the partition left its session or the session closed."""


class CachedPartition:
    """One partition of a session: the fetcher's last request parameters (``wanted``, the
    request's partition fields) and what the last response told it, so an unchanged
    partition can be left out of the next response."""

    __slots__ = ("key", "wanted", "high_watermark", "log_start_offset", "binding")

    def __init__(self, key: Key, wanted: bodies.FetchRequestPartition) -> None:
        self.key = key
        self.wanted = wanted
        # -1: never answered, so the first response always includes the partition.
        self.high_watermark = -1
        self.log_start_offset = -1
        # Set by whoever binds the partition to change notifications; released on close.
        self.binding: Binding | None = None

    def must_respond(self, answer: bodies.FetchResponsePartition, record_bytes: int) -> bool:
        """Kafka's rule: records, an error, a diverging epoch, or a high watermark / log
        start offset other than the fetcher last saw.  (The last stable offset equals
        the high watermark here: no transactions.)"""
        return (record_bytes > 0 or answer["error_code"] != ErrorCode.NONE
                or "diverging_epoch" in answer
                or answer["high_watermark"] != self.high_watermark
                or answer["log_start_offset"] != self.log_start_offset)

    def remember(self, answer: bodies.FetchResponsePartition) -> None:
        """The fetcher received ``answer``.  After an error the cached high watermark is
        invalidated so the partition is answered again once the error clears."""
        self.log_start_offset = answer["log_start_offset"]
        self.high_watermark = -1 if answer["error_code"] else answer["high_watermark"]

    def close(self) -> None:
        if self.binding is not None:
            self.binding.release()
            self.binding = None


class FetchSession:
    """A fetcher's session: its partitions (in fetch order) and those that may have news.

    ``pending`` is an ordered set of partitions that may have something to say (marked by
    change notifications, kept while they have unread data or an error): an incremental
    fetch looks at the partitions it names plus these, never at the idle rest.
    """

    def __init__(self, session_id: int, privileged: bool,
                 partitions: dict[Key, CachedPartition], now_ms: int) -> None:
        self.id = session_id
        self.epoch = next_epoch(INITIAL_EPOCH)
        self.privileged = privileged
        self.partitions = partitions
        self.pending: dict[Key, None] = {}
        self.created_ms = now_ms
        self.last_used_ms = now_ms
        # Eviction bookkeeping, refreshed by FetchSessionCache.touch only (as in Kafka).
        self.cached_size = len(partitions)
        self.evictable_by_privileged = False
        self.evictable_by_all = False
        # A parked fetch of this session sets this to be woken by :meth:`mark`.
        self.notify: Callable[[], None] | None = None

    def mark(self, key: Key, wake: bool = True) -> None:
        """Partition ``key`` may have news (data, a high watermark, a role change);
        ``wake``: also wake the session's parked fetch, if any (news that cannot end a
        parked fetch only waits for the next answer)."""
        if key in self.partitions:
            self.pending[key] = None
            if wake and self.notify is not None:
                self.notify()

    def update(self, named: Iterable[tuple[Key, bodies.FetchRequestPartition]],
               forgotten: Iterable[Key]) -> list[CachedPartition]:
        """Apply an incremental request: named partitions take their new parameters (or
        join), then forgotten ones leave.  Returns the partitions that joined."""
        added = []
        for key, wanted in named:
            cached = self.partitions.get(key)
            if cached is None:
                cached = self.partitions[key] = CachedPartition(key, wanted)
                added.append(cached)
            else:
                cached.wanted = wanted
        for key in forgotten:
            cached = self.partitions.pop(key, None)
            self.pending.pop(key, None)
            if cached is not None:
                cached.close()
        return [cached for cached in added if cached.key in self.partitions]

    def to_fetch(self, named: Iterable[Key]) -> list[CachedPartition]:
        """What an incremental fetch reads: the named partitions, then the pending ones."""
        keys = dict.fromkeys(named)
        keys.update(self.pending)
        return [self.partitions[key] for key in keys if key in self.partitions]

    def settle(self, key: Key, still_pending: bool) -> None:
        """After an answered read: keep ``key`` pending (moved to the back, so partitions
        the size limits left out go first next time) or let it rest."""
        self.pending.pop(key, None)
        if still_pending and key in self.partitions:
            self.pending[key] = None

    def close(self) -> None:
        for cached in self.partitions.values():
            cached.close()
        self.pending.clear()


class FetchSessionCache:
    """The broker's sessions by id, bounded, with Kafka's eviction rules (module doc)."""

    def __init__(self, max_slots: int = DEFAULT_CACHE_SLOTS,
                 eviction_ms: int = DEFAULT_EVICTION_MS,
                 rng: random.Random | None = None) -> None:
        self.max_slots = max_slots
        self.eviction_ms = eviction_ms
        self._rng = rng or random.Random()
        self._sessions: dict[int, FetchSession] = {}
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._sessions)

    @property
    def partitions(self) -> int:
        """Partitions cached over all sessions (as of each session's last use)."""
        return sum(session.cached_size for session in self._sessions.values())

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def create(self, now_ms: int, privileged: bool,
               partitions: dict[Key, CachedPartition]) -> FetchSession | None:
        """A new session over ``partitions`` if a slot is free or can be taken (None:
        the fetcher stays sessionless; the caller still owns ``partitions``)."""
        if (len(self._sessions) >= self.max_slots
                and not self._try_evict(privileged, len(partitions), now_ms)):
            return None
        session = FetchSession(self._new_id(), privileged, partitions, now_ms)
        self._sessions[session.id] = session
        self.touch(session, now_ms)
        return session

    def remove(self, session_id: int) -> FetchSession | None:
        """Close a session (its partitions release their notifications)."""
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.close()
        return session

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """The session was used now: refresh its recency, size and evictability."""
        session.last_used_ms = now_ms
        session.cached_size = len(session.partitions)
        old = now_ms - session.created_ms > self.eviction_ms
        session.evictable_by_privileged = old or not session.privileged
        session.evictable_by_all = old

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Free a slot for a new session of ``size`` partitions (rules in the module doc)."""
        if not self._sessions:
            return False
        oldest = min(self._sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - oldest.last_used_ms > self.eviction_ms:
            self._evict(oldest)
            return True
        candidates = [s for s in self._sessions.values()
                      if (s.evictable_by_privileged if privileged else s.evictable_by_all)]
        if not candidates:
            return False
        weakest = min(candidates, key=_value)
        if (privileged, size, 0) < _value(weakest):
            return False
        self._evict(weakest)
        return True

    def _evict(self, session: FetchSession) -> None:
        self.remove(session.id)
        self.evictions += 1

    def _new_id(self) -> int:
        while True:
            session_id = self._rng.randint(1, MAX_EPOCH)
            if session_id not in self._sessions:
                return session_id


def _value(session: FetchSession) -> tuple[bool, int, int]:
    """Kafka's EvictableKey order: unprivileged before privileged, then size, then id."""
    return session.privileged, session.cached_size, session.id
