"""The idle-connections probe end to end at a tiny scale: a real ZooKeeper and broker,
SASL logins included, and everything it started gone afterwards."""

from __future__ import annotations

import pytest

from bench.connections import run


@pytest.mark.integration
def test_every_connection_is_opened_and_measured() -> None:
    figures = run(connections=40, sasl_share=0.25, idle_seconds=0.5)
    assert figures["connections"] == 40 and figures["sasl"] == 10
    assert figures["rss_after_mb"] > 0 and figures["idle_cpu_cores_with"] >= 0
    assert isinstance(figures["bytes_per_connection"], int)
