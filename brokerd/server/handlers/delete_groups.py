"""DeleteGroups (42) v0-2: removes empty groups and their offsets (tombstones).

The group coordinator (``brokerd.groups``) holds all the logic; this module only routes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey

if TYPE_CHECKING:
    from brokerd.server.broker import Broker
    from brokerd.server.request import Request

API_KEY = ApiKey.DELETE_GROUPS
MIN_VERSION, MAX_VERSION = 0, 2


async def handle(broker: Broker, request: Request) -> dict[str, Any]:
    return await broker.groups.delete_groups(request.body, request.version)
