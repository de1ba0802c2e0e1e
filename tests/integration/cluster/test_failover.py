"""Failover at scale: 3 brokers, 3,000 partitions (RF=3), one broker leading 1,000 of them.

Bounds from the issue: after kill -9, new leaders for all within the ZooKeeper session
timeout + 5 s; after a controlled shutdown (SIGTERM), within 5 s and with no produce
error visible to an idempotent acks=all client.  The measurement itself lives in
``bench/failover.py`` (``bench/replication.py`` prints the same figures)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.failover import FAILOVER_PROPERTIES, measure
from tests.integration.cluster.harness import SESSION_TIMEOUT_MS, Cluster, started_cluster


@pytest.fixture
def scale_cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    yield from started_cluster(zk_connect, tmp_path, **FAILOVER_PROPERTIES)


@pytest.mark.serial
def test_failover_of_a_thousand_leaders(scale_cluster: Cluster) -> None:
    figures = measure(scale_cluster)
    print(figures.as_dict())
    assert figures.partitions == 3_006
    assert figures.led_by_victim >= 1_000
    assert figures.kill_s <= SESSION_TIMEOUT_MS / 1000 + 5, figures
    assert figures.controlled_s <= 5, figures
    assert figures.produce_errors == [], figures
