"""Producer ids for InitProducerId, unique across brokers.

Each broker claims a block of ids at a time from ZooKeeper (``/latest_producer_id_block``,
a conditional update, so two brokers never claim the same block) and hands them out one
by one; ZooKeeper is consulted once per block, not per producer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from brokerd.coordination.znodes import ProducerIdBlock


class ProducerIdAllocator:
    """Hands out ids from the current block, fetching the next block when it runs out."""

    def __init__(self, claim_block: Callable[[], Awaitable[ProducerIdBlock]]) -> None:
        self._claim_block = claim_block
        self._next = 0
        self._end = -1  # inclusive; next > end means no ids left
        self._lock = asyncio.Lock()

    async def next_id(self) -> int:
        async with self._lock:
            if self._next > self._end:
                block = await self._claim_block()
                self._next, self._end = block.start, block.end
            producer_id = self._next
            self._next += 1
            return producer_id
