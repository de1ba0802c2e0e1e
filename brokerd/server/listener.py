"""One listening socket (``NAME://host:port``) and the connections it accepted.

The listener chooses what each connection is made of — today a PLAINTEXT connection with
the shared dispatcher; later the security protocol decides whether a TLS context or a
SASL authenticator is attached before requests reach the dispatcher.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from brokerd.config import Endpoint
from brokerd.server.connection import Connection
from brokerd.server.dispatch import Dispatcher
from brokerd.server.transfer import ResponseWriter

if TYPE_CHECKING:
    from brokerd.server.broker import Broker

log = logging.getLogger(__name__)

SUPPORTED_SECURITY_PROTOCOLS = ("PLAINTEXT",)
ACCEPT_BACKLOG = 1024


class Listener:
    """Accepts clients on one endpoint; tracks live connections for graceful shutdown."""

    def __init__(self, endpoint: Endpoint, broker: Broker) -> None:
        if endpoint.name not in SUPPORTED_SECURITY_PROTOCOLS:
            raise ValueError(f"listener {endpoint.url}: only {SUPPORTED_SECURITY_PROTOCOLS} "
                             "are implemented")
        self.endpoint = endpoint
        self._broker = broker
        self._dispatcher = Dispatcher(broker)
        self._server: asyncio.Server | None = None
        self.connections: set[Connection] = set()

    def _new_connection(self) -> Connection:
        mode = self._broker.config.fetch_transfer
        connection = Connection(
            self._dispatcher,
            self.endpoint.name,
            self._broker.config.socket_request_max_bytes,
            lambda transport: ResponseWriter(transport, mode),
            on_close=self.connections.discard,
        )
        self.connections.add(connection)
        return connection

    async def bind(self) -> None:
        """Bind the socket without accepting yet (fails early on a port clash)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._new_connection, self.endpoint.host, self.endpoint.port,
            backlog=ACCEPT_BACKLOG, reuse_address=True, start_serving=False)

    async def start_serving(self) -> None:
        assert self._server is not None, "bind() first"
        await self._server.start_serving()

    def stop_accepting(self) -> None:
        if self._server is not None:
            self._server.close()

    def close_connections(self) -> None:
        for connection in list(self.connections):
            connection.close("broker shutting down")
