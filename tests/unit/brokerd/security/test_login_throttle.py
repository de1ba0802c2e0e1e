"""Failed-login log limiting: one line per key per interval, suppressed counts carried over."""

from __future__ import annotations

import pytest

from brokerd.security import FailureReport, LoginFailureLog
from brokerd.security.login_throttle import OVERFLOW_KEY


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_first_failure_reported_then_suppressed_until_the_interval_passes(clock: Clock) -> None:
    log = LoginFailureLog(10.0, clock=clock)
    assert log.record_failure("10.0.0.1", "KEY") == FailureReport("10.0.0.1", "KEY", 0)
    for _ in range(5):
        clock.now += 1.0
        assert log.record_failure("10.0.0.1", "KEY") is None
    clock.now += 5.0  # 10 s after the first report
    assert log.record_failure("10.0.0.1", "KEY") == FailureReport("10.0.0.1", "KEY", 5)
    clock.now += 9.9
    assert log.record_failure("10.0.0.1", "KEY") is None


def test_keys_are_independent(clock: Clock) -> None:
    log = LoginFailureLog(10.0, clock=clock)
    assert log.record_failure("10.0.0.1", "A") is not None
    assert log.record_failure("10.0.0.1", "B") is not None
    assert log.record_failure("10.0.0.2", "A") is not None
    assert log.record_failure("10.0.0.1", "A") is None


def test_missing_username_is_a_key_too(clock: Clock) -> None:
    log = LoginFailureLog(10.0, clock=clock)
    assert log.record_failure("10.0.0.1", None) == FailureReport("10.0.0.1", "", 0)
    assert log.record_failure("10.0.0.1", None) is None


def test_memory_bounded_with_an_overflow_key(clock: Clock) -> None:
    log = LoginFailureLog(10.0, max_keys=3, clock=clock)
    for name in ("a", "b", "c"):
        assert log.record_failure("ip", name) is not None
    assert log.record_failure("ip", "d") == FailureReport(*OVERFLOW_KEY, suppressed=0)
    assert log.record_failure("ip", "e") is None  # counted under the overflow key
    clock.now += 10.0  # every key is now stale and may be forgotten
    assert log.record_failure("ip", "f") == FailureReport("ip", "f", 0)
    assert len(log._keys) == 1


def test_invalid_configuration() -> None:
    with pytest.raises(ValueError):
        LoginFailureLog(0)
    with pytest.raises(ValueError):
        LoginFailureLog(1, max_keys=0)
