"""The whole harness, end to end, at a tiny scale: real ZooKeeper, broker and clients."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.run_all import Plan, run_benchmark, run_profile

TINY = Plan(records_1k=3_000, records_100=5_000, phase_seconds=10.0, latency_rate=200,
            latency_seconds=1.0, storage_megabytes=2, rebalance_rounds=1)


@pytest.mark.integration
def test_every_phase_reports_figures() -> None:
    results = run_benchmark(TINY)
    throughput = results["throughput"]
    assert throughput["produce 1 KiB"]["records"] == 3_000
    assert throughput["consume 1 KiB"]["records"] == 3_000
    assert throughput["produce 100 B"]["records"] == 5_000
    assert throughput["consume 100 B"]["records"] == 5_000
    assert throughput["consume 1 KiB"]["mb_per_second"] > 0
    consumer = results["latency"]["consumer"]
    assert consumer["records"] == 200
    assert 0 < consumer["p50_ms"] <= consumer["p99_ms"] <= consumer["max_ms"]
    assert results["ceiling"]["loopback_tcp_mb_per_second"] > 0
    assert results["storage"]["append_mb_per_second"] > 0
    rebalance = results["rebalance"]
    assert rebalance.get("rounds") == 1 and rebalance["max_ms"] > 0, rebalance


@pytest.mark.integration
def test_profile_of_the_broker_is_written_on_graceful_stop(tmp_path: Path) -> None:
    text = run_profile("produce-1k", TINY, tmp_path, top=200)
    assert (tmp_path / "broker-produce-1k.prof").stat().st_size > 0
    assert "produce: {'records': 3000" in text
    assert "brokerd/server/handlers/produce.py" in text  # the profiled broker did the work
