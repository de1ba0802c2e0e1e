"""OffsetFetch (9) v1-8: a group's committed offsets (v8 batches groups, KIP-709).
v0, which read ZooKeeper-stored offsets, is not served.

The group coordinator (``brokerd.groups``) holds all the logic; this module only routes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey

if TYPE_CHECKING:
    from brokerd.server.broker import Broker
    from brokerd.server.request import Request

API_KEY = ApiKey.OFFSET_FETCH
MIN_VERSION, MAX_VERSION = 1, 8


async def handle(broker: Broker, request: Request) -> dict[str, Any]:
    return await broker.groups.offset_fetch(request.body, request.version)
