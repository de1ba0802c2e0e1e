"""SyncGroup (14) v0-5: the leader hands out the assignment; members wait for it.

The group coordinator (``brokerd.groups``) holds all the logic; this module only routes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey

if TYPE_CHECKING:
    from brokerd.server.broker import Broker
    from brokerd.server.request import Request

API_KEY = ApiKey.SYNC_GROUP
MIN_VERSION, MAX_VERSION = 0, 5


async def handle(broker: Broker, request: Request) -> dict[str, Any]:
    return await broker.groups.sync_group(request.body, request.version)
