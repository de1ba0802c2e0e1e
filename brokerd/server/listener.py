"""One listening socket (``NAME://host:port``) and the connections it accepted.

The listener name is its security protocol, and decides what a connection is made of:

============== ======= ==========================================================
protocol       TLS     principal
============== ======= ==========================================================
PLAINTEXT      no      ``ANONYMOUS`` (operator; keep it on a private interface)
SSL            yes     ``ANONYMOUS``, or the client certificate's (``ssl.client.auth``)
SASL_PLAINTEXT no      whoever authenticates (SaslHandshake + SaslAuthenticate)
SASL_SSL       yes     whoever authenticates, over TLS
============== ======= ==========================================================

TLS is Python's ``ssl`` with the broker's PEM key and certificate chain
(``ssl.keystore.location``); Fetch responses then use the pread path, since sendfile would
bypass the encryption (see ``transfer``).  A connection beyond ``max.connections.per.ip``
from one address is closed as soon as it is accepted.

Density: an idle connection costs the listener no periodic work and its connection no
receive buffer — the connections share one (see ``connection``), and the idle check looks
only at connections that may have expired (``idle.IdleSchedule``).  Each connection is a
file descriptor: thousands of them need ``ulimit -n`` raised accordingly.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
from collections.abc import KeysView
from typing import TYPE_CHECKING

from brokerd.config import Endpoint
from brokerd.server.client_certs import require_client_certificates
from brokerd.server.connection import Connection, new_receive_buffer
from brokerd.server.dispatch import Dispatcher
from brokerd.server.idle import IdleSchedule
from brokerd.server.transfer import ResponseWriter

if TYPE_CHECKING:
    from brokerd.server.broker import Broker

log = logging.getLogger(__name__)

SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
TLS_PROTOCOLS = ("SSL", "SASL_SSL")
SUPPORTED_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", *SASL_PROTOCOLS)
# Connections the kernel queues before we accept them: a reconnect storm of thousands of
# clients (a broker restart) must not overflow it.  Linux caps it at net.core.somaxconn.
ACCEPT_BACKLOG = 4096
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
            if endpoint.name == "SSL":  # mTLS (ssl.client.auth); SASL_SSL clients log in
                require_client_certificates(self._tls, broker.config.static_props)
        self._server: asyncio.Server | None = None
        # Made once and shared by every connection, which then holds only references.
        self._receive_buffer = new_receive_buffer()
        self._writer_factory = functools.partial(ResponseWriter, mode=broker.config.fetch_transfer)
        self._on_open, self._on_close = self._opened, self._closed
        self._idle: IdleSchedule[Connection] = IdleSchedule(lambda c: c.last_active)

    @property
    def connections(self) -> KeysView[Connection]:
        """The live (admitted, not yet closed) connections."""
        return self._idle.members()

    def _new_connection(self) -> Connection:
        return Connection(
            self._dispatcher,
            self.endpoint.name,
            self._broker.config.socket_request_max_bytes,
            self._writer_factory,
            on_close=self._on_close,
            on_open=self._on_open,
            receive_buffer=self._receive_buffer,
        )

    def _opened(self, connection: Connection) -> None:
        if not self._broker.security.admit(connection):
            connection.close("too many connections from this address (max.connections.per.ip)")
            return
        self._idle.add(connection)
        if self._tls is not None and not self.sasl:
            self._broker.client_certs.identify(connection)  # its certificate, or ANONYMOUS
        elif not self.sasl:
            self._broker.security.set_anonymous(connection)

    def _closed(self, connection: Connection) -> None:
        if connection in self.connections:
            self._idle.discard(connection)
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
        for connection in self._idle.pop_idle(idle_since):
            connection.close("idle for longer than connections.max.idle.ms")
