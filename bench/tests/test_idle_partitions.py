"""The harness's broker start-up bound is lengthened only around the failover's restart;
a count is reached only once every broker has created every replica's log."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from bench.idle_partitions import broker_start_timeout, hosted_count
from tests.integration.brokerd import broker_process


def test_hosted_count_is_the_least_any_live_broker_has_created(tmp_path: Path) -> None:
    directories = {1: ["scale-0-0", "scale-0-1", "scale-1-0", "scale-10-0", "other-0"],
                   2: ["scale-0-0", "scale-1-0", "__consumer_offsets-3"],
                   3: []}
    brokers = {}
    for broker_id, names in directories.items():
        log_dir = tmp_path / f"logs-{broker_id}"
        for name in names:
            (log_dir / name).mkdir(parents=True)
        log_dir.mkdir(exist_ok=True)
        brokers[broker_id] = SimpleNamespace(log_dir=log_dir)
    cluster = cast(Any, SimpleNamespace(brokers=brokers, live_ids=lambda: [1, 2]))
    assert hosted_count(cluster, ["scale-0", "scale-1"]) == 2  # broker 2's two; 3 is dead
    cluster.live_ids = lambda: [1]
    assert hosted_count(cluster, ["scale-0", "scale-1"]) == 3  # scale-10 is no wanted topic


def test_the_start_timeout_is_raised_inside_and_restored_after_a_failure() -> None:
    before = broker_process.START_TIMEOUT_S
    with pytest.raises(RuntimeError), broker_start_timeout(before + 100):
        assert broker_process.START_TIMEOUT_S == before + 100
        raise RuntimeError("the failover failed")
    assert broker_process.START_TIMEOUT_S == before


def test_a_shorter_timeout_never_lowers_the_harness_bound() -> None:
    before = broker_process.START_TIMEOUT_S
    with broker_start_timeout(1):
        assert broker_process.START_TIMEOUT_S == before
