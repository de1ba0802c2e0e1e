"""Failover at scale: 3 brokers, 3,000 partitions (RF=3), one broker leading 1,000 of them.

What must hold whatever the machine's load: after kill -9 every partition gets a live
leader, the restarted broker leads its preferred partitions again, and a controlled
shutdown (SIGTERM) moves every leadership away with no produce error visible to an
idempotent acks=all client and no acknowledged record lost.  How fast is a figure, not a
test: ``bench/failover.py`` measures it (``make bench-replication`` prints it); the waits
inside :func:`~bench.failover.measure` are hang guards only (tens of seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.failover import FAILOVER_PROPERTIES, measure
from tests.integration.cluster.harness import Cluster, started_cluster


@pytest.fixture
def scale_cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    for cluster in started_cluster(zk_connect, tmp_path, **FAILOVER_PROPERTIES):
        yield cluster
        cluster.kill_all()


@pytest.mark.serial  # heavy: runs alone so its 9,000 replicas don't starve other tests
def test_failover_of_a_thousand_leaders(scale_cluster: Cluster) -> None:
    figures = measure(scale_cluster)  # asserts that no acknowledged record was lost
    print(figures.as_dict())
    assert figures.partitions == 3_006
    assert figures.led_by_victim >= 1_000
    assert figures.produce_errors == [], figures
