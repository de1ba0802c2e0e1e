"""LeaveGroup (13) v0-5: members leave at once (v3+ in batches, by member or
instance id) instead of waiting for their session to expire.

The group coordinator (``brokerd.groups``) holds all the logic; this module only routes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey

if TYPE_CHECKING:
    from brokerd.server.broker import Broker
    from brokerd.server.request import Request

API_KEY = ApiKey.LEAVE_GROUP
MIN_VERSION, MAX_VERSION = 0, 5


async def handle(broker: Broker, request: Request) -> dict[str, Any]:
    return await broker.groups.leave_group(request.body, request.version)
