"""Helpers several API handlers share (each handler module stays one API; see STYLE.md).

Endpoints are looked up by listener name so every broker is reported at the address of the
listener the client came in on.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from brokerd.coordination.znodes import BrokerRegistration

if TYPE_CHECKING:
    from brokerd.server.context import HandlerContext

#: "No topic id" on the wire (Kafka's Uuid.ZERO_UUID).
ZERO_UUID = uuid.UUID(int=0)


def endpoint_for(registration: BrokerRegistration, listener: str) -> tuple[str, int] | None:
    """(host, port) of ``registration``'s endpoint named ``listener`` (None if it has none)."""
    for url in registration.endpoints:
        name, _, address = url.partition("://")
        if name == listener:
            host, _, port = address.rpartition(":")
            return host, int(port)
    if not registration.endpoints:
        return registration.host, registration.port
    return None


def broker_entries(broker: HandlerContext, listener: str) -> list[dict[str, Any]]:
    entries = []
    for broker_id, registration in sorted(broker.cache.brokers.items()):
        endpoint = endpoint_for(registration, listener)
        if endpoint is not None:
            entries.append({"node_id": broker_id, "host": endpoint[0], "port": endpoint[1],
                            "rack": registration.rack})
    return entries
