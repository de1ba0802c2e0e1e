"""Thousands of idle client connections on one broker: it still serves the active client,
and ``connections.max.idle.ms`` closes the idle ones (the shared receive buffer of
``brokerd/server/connection.py`` and the idle schedule of ``brokerd/server/idle.py``,
end to end).  Correctness only: the memory and CPU per idle connection are measured
outside the suite (docs/brokerd.md, "Connections at density")."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable

import pytest

from brokerd.protocol import ApiKey, encode_request
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient, recv_exactly
from tests.integration.brokerd.test_wire import batch, create_topic, fetch_body, produce

pytestmark = pytest.mark.integration

IDLE_CONNECTIONS = 2_000
IDLE_MS = 4_000
# Hang guards only (no timing is asserted): a loaded machine may be slow, never stuck.
WIRE_TIMEOUT_S = 30.0
REAP_DEADLINE_S = 90.0


def open_idle_connections(port: int, count: int) -> list[socket.socket]:
    """``count`` connections that each had one ApiVersions answered, so every one has a
    ``Connection`` that processed a frame; sent pipelined, then read, to be quick."""
    sockets = [socket.create_connection(("127.0.0.1", port), timeout=WIRE_TIMEOUT_S)
               for _ in range(count)]
    request = encode_request(ApiKey.API_VERSIONS, 3, 1, "idle", {})
    for sock in sockets:
        sock.sendall(request)
    for sock in sockets:
        size = struct.unpack(">i", recv_exactly(sock, 4))[0]
        recv_exactly(sock, size)
    return sockets


def closed_by_broker(sock: socket.socket, deadline: float) -> bool:
    """Whether the broker closes ``sock`` before ``deadline`` (it sends nothing more)."""
    sock.settimeout(max(deadline - time.monotonic(), 0.01))
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_thousands_of_idle_connections_neither_block_service_nor_outlive_the_idle_limit(
        start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker(connections_max_idle_ms=str(IDLE_MS))
    idle = open_idle_connections(broker.port, IDLE_CONNECTIONS)
    try:
        client = WireClient(broker.port, timeout=WIRE_TIMEOUT_S)
        create_topic(client, "density")
        assert produce(client, "density", batch(b"through the crowd"))["error_code"] == 0
        fetched = client.request(ApiKey.FETCH, 12, fetch_body("density", 0))
        assert b"through the crowd" in bytes(fetched["responses"][0]["partitions"][0]["records"])
        client.close()

        deadline = time.monotonic() + REAP_DEADLINE_S
        still_open = [sock for sock in idle if not closed_by_broker(sock, deadline)]
        assert still_open == []
        assert "idle for longer than connections.max.idle.ms" in broker.output()
    finally:
        for sock in idle:
            sock.close()
