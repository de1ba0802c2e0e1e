"""The harness's broker start-up bound is lengthened only around the failover's restart."""

from __future__ import annotations

import pytest

from bench.idle_partitions import broker_start_timeout
from tests.integration.brokerd import broker_process


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
