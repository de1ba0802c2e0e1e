"""DescribeGroups (15) v0-5: state, protocol and members (with assignments) of
groups coordinated here; other groups get NOT_COORDINATOR.

The group coordinator (``brokerd.groups``) holds all the logic; this module only routes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey

if TYPE_CHECKING:
    from brokerd.server.broker import Broker
    from brokerd.server.request import Request

API_KEY = ApiKey.DESCRIBE_GROUPS
MIN_VERSION, MAX_VERSION = 0, 5


async def handle(broker: Broker, request: Request) -> dict[str, Any]:
    return await broker.groups.describe_groups(request.body, request.version)
