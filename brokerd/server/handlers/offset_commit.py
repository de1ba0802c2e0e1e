"""OffsetCommit (8) v1-8: commits are fenced by generation (and instance id) and
acknowledged only once written to ``__consumer_offsets``.  v0 (offsets kept in ZooKeeper
by old Scala clients) is not served.

The group coordinator (``brokerd.groups``) holds all the logic; this module only routes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey

if TYPE_CHECKING:
    from brokerd.server.broker import Broker
    from brokerd.server.request import Request

API_KEY = ApiKey.OFFSET_COMMIT
MIN_VERSION, MAX_VERSION = 1, 8


async def handle(broker: Broker, request: Request) -> dict[str, Any]:
    return await broker.groups.offset_commit(request.body, request.version)
