"""OffsetDelete (47) v0: removes a group's committed offsets of partitions it no
longer consumes.

The group coordinator (``brokerd.groups``) holds all the logic; this module only routes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey

if TYPE_CHECKING:
    from brokerd.server.broker import Broker
    from brokerd.server.request import Request

API_KEY = ApiKey.OFFSET_DELETE
MIN_VERSION, MAX_VERSION = 0, 0


async def handle(broker: Broker, request: Request) -> dict[str, Any]:
    return await broker.groups.offset_delete(request.body, request.version)
