"""Fixtures: a real broker process per test (SIGTERM at teardown, SIGKILL if stuck)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.integration.brokerd.broker_process import BrokerProcess


@pytest.fixture
def start_broker(zk_connect: str, tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    """Factory: ``start_broker(broker_id=1, **properties)`` -> a running broker."""
    started: list[BrokerProcess] = []

    def start(broker_id: int = 1, **properties: str) -> BrokerProcess:
        props = {"zookeeper.session.timeout.ms": "6000", **{
            key.replace("_", "."): value for key, value in properties.items()}}
        broker = BrokerProcess(zk_connect, tmp_path / f"logs-{broker_id}", broker_id,
                               properties=props)
        started.append(broker)
        return broker.start()

    yield start
    for broker in started:
        if broker.process is not None and broker.process.poll() is None:
            try:
                broker.stop(timeout=5)
            except Exception:
                broker.kill()


@pytest.fixture
def broker(start_broker: Callable[..., BrokerProcess]) -> BrokerProcess:
    return start_broker()
