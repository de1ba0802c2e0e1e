"""One listening socket (``NAME://host:port``) and the connections it accepted.

The listener name is its security protocol, and decides what a connection is made of:

============== ======= ==========================================================
protocol       TLS     principal
============== ======= ==========================================================
PLAINTEXT      no      ``ANONYMOUS`` (operator; keep it on a private interface)
SSL            yes     ``ANONYMOUS`` (operator, encrypted)
SASL_PLAINTEXT no      whoever authenticates (SaslHandshake + SaslAuthenticate)
SASL_SSL       yes     whoever authenticates, over TLS
============== ======= ==========================================================

TLS is Python's ``ssl`` with the broker's PEM key and certificate chain
(``ssl.keystore.location``); Fetch responses then use the pread path, since sendfile would
bypass the encryption (see ``transfer``).  A connection beyond ``max.connections.per.ip``
from one address is closed as soon as it is accepted.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import TYPE_CHECKING

from brokerd.config import Endpoint
from brokerd.server.connection import Connection
from brokerd.server.dispatch import Dispatcher
from brokerd.server.transfer import ResponseWriter

if TYPE_CHECKING:
    from brokerd.server.broker import Broker

log = logging.getLogger(__name__)

SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
TLS_PROTOCOLS = ("SSL", "SASL_SSL")
SUPPORTED_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", *SASL_PROTOCOLS)
ACCEPT_BACKLOG = 1024
# TLS handshakes of a slow or silent client must not hold a socket for long.
TLS_HANDSHAKE_TIMEOUT_S = 10.0


def server_tls_context(keystore: str) -> ssl.SSLContext:
    """A TLS server context from one PEM file holding the private key and certificate chain."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(keystore)
    return context


class Listener:
    """Accepts clients on one endpoint; tracks live connections for graceful shutdown."""

    def __init__(self, endpoint: Endpoint, broker: Broker) -> None:
        if endpoint.name not in SUPPORTED_SECURITY_PROTOCOLS:
            raise ValueError(f"listener {endpoint.url}: only {SUPPORTED_SECURITY_PROTOCOLS} "
                             "are implemented")
        self.endpoint = endpoint
        self.sasl = endpoint.name in SASL_PROTOCOLS
        self._broker = broker
        self._dispatcher = Dispatcher(broker)
        self._tls: ssl.SSLContext | None = None
        if endpoint.name in TLS_PROTOCOLS:
            assert broker.config.ssl_keystore_location is not None  # checked by the config
            self._tls = server_tls_context(str(broker.config.ssl_keystore_location))
        self._server: asyncio.Server | None = None
        self.connections: set[Connection] = set()

    def _new_connection(self) -> Connection:
        mode = self._broker.config.fetch_transfer
        return Connection(
            self._dispatcher,
            self.endpoint.name,
            self._broker.config.socket_request_max_bytes,
            lambda transport: ResponseWriter(transport, mode),
            on_close=self._closed,
            on_open=self._opened,
        )

    def _opened(self, connection: Connection) -> None:
        if not self._broker.security.admit(connection):
            connection.close("too many connections from this address (max.connections.per.ip)")
            return
        self.connections.add(connection)
        if not self.sasl:
            self._broker.security.set_anonymous(connection)

    def _closed(self, connection: Connection) -> None:
        if connection in self.connections:
            self.connections.discard(connection)
            self._broker.security.release(connection)

    async def bind(self) -> None:
        """Bind the socket without accepting yet (fails early on a port clash)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._new_connection, self.endpoint.host, self.endpoint.port,
            backlog=ACCEPT_BACKLOG, reuse_address=True, start_serving=False, ssl=self._tls,
            ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S if self._tls is not None else None)

    async def start_serving(self) -> None:
        assert self._server is not None, "bind() first"
        await self._server.start_serving()

    def stop_accepting(self) -> None:
        if self._server is not None:
            self._server.close()

    def close_connections(self) -> None:
        for connection in list(self.connections):
            connection.close("broker shutting down")

    def close_idle(self, idle_since: float) -> None:
        """Reap connections with no traffic since ``idle_since`` (``connections.max.idle.ms``)."""
        for connection in list(self.connections):
            if connection.last_active < idle_since:
                connection.close("idle for longer than connections.max.idle.ms")
