"""The test harness's broker start survives a metrics port taken between the moment it was
picked and the broker's bind (another test's process got it first)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.integration.brokerd.broker_process import BrokerProcess

pytestmark = pytest.mark.integration


def test_a_taken_metrics_port_is_replaced_at_start(zk_connect: str, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        broker = BrokerProcess(zk_connect, tmp_path / "logs-1", 1, metrics_port=port,
                               properties={"zookeeper.session.timeout.ms": "6000"})
        try:
            broker.start()
            assert broker.metrics_port != port
            with socket.create_connection(("127.0.0.1", broker.metrics_port), timeout=5):
                pass  # the broker serves its metrics on the port it was given instead
        finally:
            if broker.process is not None:
                broker.kill()
