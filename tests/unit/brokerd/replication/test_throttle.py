"""The replication throttle's byte bucket."""

from __future__ import annotations

from brokerd.replication.throttle import ByteRateLimit


def test_unlimited_by_default() -> None:
    assert ByteRateLimit().allowance(0.0, 1 << 20) == 1 << 20


def test_the_bucket_holds_one_second_and_refills_at_the_rate() -> None:
    limit = ByteRateLimit(1000.0, now=0.0)
    assert limit.allowance(0.0, 5000) == 1000
    limit.charge(1500, 0.0)  # one batch larger than asked: the balance goes negative
    assert limit.allowance(0.4, 5000) == 0
    assert limit.allowance(1.0, 5000) == 500
    assert limit.allowance(10.0, 5000) == 1000  # never more than a second's worth


def test_a_rate_change_applies_at_once() -> None:
    limit = ByteRateLimit(1000.0, now=0.0)
    limit.set_rate(100.0, 0.0)
    assert limit.allowance(0.0, 5000) == 100
    limit.set_rate(0.0, 1.0)
    assert limit.allowance(1.0, 5000) == 5000
