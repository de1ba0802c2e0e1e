"""Throttle formula, fetch size cap, combination."""

from __future__ import annotations

import pytest

from brokerd.quota import combined_throttle_ms, fetch_size_cap, throttle_time_ms

MB = 1_048_576


@pytest.mark.parametrize(("observed", "quota", "window_ms", "expected"), [
    (2 * MB, MB, 11_000, 11_000),       # twice the quota: stay silent one more span
    (3 * MB, MB, 10_000, 20_000),       # (3T - T) / T x W
    (1.5 * MB, MB, 10_000, 5_000),
    (1_100, 1_000, 10_500, 1_050),
    (4_000 / 3, 1_000, 10_000, 3_333),  # 3 333.3 rounds down
    (5, 4, 10, 3),                      # exactly 2.5 rounds half up (Java Math.round)
    (MB, MB, 11_000, 0),                # at the quota is within it
    (MB - 1, MB, 11_000, 0),
    (0, MB, 11_000, 0),
])
def test_throttle_time(observed: float, quota: float, window_ms: float, expected: int) -> None:
    assert throttle_time_ms(observed, quota, window_ms) == expected


def test_waiting_the_throttle_brings_the_rate_back_to_the_quota() -> None:
    # S units over W: silent for X, the rate S / (W + X) equals T.
    total, window_ms, quota = 33_000.0, 11_000, 1_000.0
    throttle = throttle_time_ms(total / (window_ms / 1000), quota, window_ms)
    assert total / ((window_ms + throttle) / 1000) == pytest.approx(quota)


def test_quota_must_be_positive() -> None:
    with pytest.raises(ValueError):
        throttle_time_ms(10, 0, 1_000)


def test_fetch_size_cap() -> None:
    assert fetch_size_cap(MB, 11, 1) == 10 * MB
    assert fetch_size_cap(10 * 1024, 11, 1) == 102_400   # a tiny 10 KiB/s quota still reads
    assert fetch_size_cap(1, 11, 1) == 10
    assert fetch_size_cap(0.55, 11, 1) == 5              # truncated to whole bytes
    assert fetch_size_cap(1000, 3, 0.5) == 1_000


def test_combined_throttle_is_the_longest() -> None:
    assert combined_throttle_ms(0, 1_000) == 1_000
    assert combined_throttle_ms(7_500, 1_000) == 7_500
    assert combined_throttle_ms(0, 0) == 0
    assert combined_throttle_ms() == 0
