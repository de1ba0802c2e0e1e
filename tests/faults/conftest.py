"""One fault cluster (three brokers, a three-node ZooKeeper ensemble, private network
namespaces) for the fault tests of a module; skipped, with the reason, where this machine
cannot create network namespaces."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.cluster import FaultCluster
from tests.faults.network import can_create


@pytest.fixture(scope="module")
def fault_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultCluster]:
    reason = can_create()
    if reason is not None:
        pytest.skip(reason)
    cluster = FaultCluster(Path(tmp_path_factory.mktemp("faults")))
    try:
        yield cluster.start()
    finally:
        cluster.close()
