"""Fixtures: a real three-broker cluster per test on the session's ZooKeeper."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cluster.harness import Cluster, started_cluster


@pytest.fixture
def cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    yield from started_cluster(zk_connect, tmp_path)
