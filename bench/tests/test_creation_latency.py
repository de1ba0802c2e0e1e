"""The creation-latency benchmark's windows: the warm-up is left out, and the records sent
from the admin request on are the ones counted during it."""

from __future__ import annotations

from bench.creation_latency import ACT_AT_S, WARM_UP_S, windows


def test_records_are_counted_by_when_they_were_sent() -> None:
    delivered = [(WARM_UP_S / 2, 9.0),  # warm-up: left out
                 (WARM_UP_S, 0.002), (ACT_AT_S - 0.1, 0.004),
                 (ACT_AT_S, 0.300), (ACT_AT_S + 5, 0.100)]
    figures = windows(delivered)
    assert figures["alone"] == {"p50_ms": 2.0, "p99_ms": 4.0, "max_ms": 4.0, "records": 2}
    assert figures["during"] == {"p50_ms": 100.0, "p99_ms": 300.0, "max_ms": 300.0,
                                         "records": 2}
