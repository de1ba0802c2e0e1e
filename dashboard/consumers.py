"""WebSocket consumers pushing live lag to the console pages.

A socket is authorised by the session (Channels' AuthMiddlewareStack puts the user in the
scope) exactly like the pages: operators may watch any tenant, a tenant admin only its own.
Anything else is closed before acceptance (the browser sees a failed handshake).
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from tenants.api.access import visible_tenants

from .live import group_channel_group, tenant_channel_group


def may_watch(user: Any, slug: str) -> bool:
    return bool(user is not None and user.is_authenticated
                and visible_tenants(user).filter(slug=slug).exists())


class LagConsumer(AsyncJsonWebsocketConsumer):
    """``/ws/tenants/<slug>/consumer-groups/`` (summaries) or ``…/<group>/`` (one group)."""

    channel_group: str | None = None

    async def connect(self) -> None:
        kwargs = self.scope["url_route"]["kwargs"]
        slug, group = kwargs["slug"], kwargs.get("group")
        if not await database_sync_to_async(may_watch)(self.scope.get("user"), slug):
            await self.close()
            return
        self.channel_group = group_channel_group(slug, group) if group else tenant_channel_group(slug)
        await self.channel_layer.group_add(self.channel_group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.channel_group is not None:
            await self.channel_layer.group_discard(self.channel_group, self.channel_name)

    async def lag_update(self, event: dict[str, Any]) -> None:
        await self.send_json(event["payload"])
