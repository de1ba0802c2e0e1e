"""Per-key asyncio locks that exist only while someone holds or waits for them.

Why: the coordinators (groups, transactions) serialize the operations on one group or one
transactional id, while operations on different keys run freely; a lock per key ever
seen would grow without bound with the ids clients invent.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field


@dataclass
class _Entry:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class KeyedLocks:
    """``async with locks.hold(key):`` — mutual exclusion per key."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        entry = self._entries.setdefault(key, _Entry())
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0:
                del self._entries[key]

    def __len__(self) -> int:
        """Keys with a holder or a waiter."""
        return len(self._entries)
