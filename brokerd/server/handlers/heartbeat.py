"""Heartbeat (12) v0-4: keeps a member's session alive and tells it to rejoin
when a rebalance is under way.

The group coordinator (``brokerd.groups``) holds all the logic; this module only routes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey

if TYPE_CHECKING:
    from brokerd.server.broker import Broker
    from brokerd.server.request import Request

API_KEY = ApiKey.HEARTBEAT
MIN_VERSION, MAX_VERSION = 0, 4


async def handle(broker: Broker, request: Request) -> dict[str, Any]:
    return await broker.groups.heartbeat(request.body, request.version)
