"""Kafka's sampled rate, millisecond by millisecond (11 samples of 1 s unless stated)."""

from __future__ import annotations

import pytest

from brokerd.quota import QuotaWindow, SampledRate


def test_an_empty_rate_is_zero_over_the_cold_span() -> None:
    rate = SampledRate()
    assert rate.rate(5_000) == 0.0
    assert rate.window_size_ms(5_000) == 10_000


def test_first_event_is_spread_over_ten_assumed_empty_windows() -> None:
    rate = SampledRate()
    rate.record(10_000, 0)
    # span = (N-1) x W + elapsed fraction: not 10 000 / 0 s.
    assert rate.window_size_ms(0) == 10_000
    assert rate.rate(0) == pytest.approx(1_000.0)
    assert rate.window_size_ms(500) == 10_500
    assert rate.rate(500) == pytest.approx(10_000 / 10.5)


def test_first_seconds_keep_a_span_of_ten_seconds_plus_the_fraction() -> None:
    rate = SampledRate()
    for second in range(5):
        rate.record(1_000, second * 1_000)
    # 4.25 s elapsed: 4 full windows, 6 assumed: 4 250 + 6 000.
    assert rate.window_size_ms(4_250) == 10_250
    assert rate.rate(4_250) == pytest.approx(5_000 / 10.25)


def test_samples_open_exactly_at_the_window_boundary() -> None:
    rate = SampledRate()
    rate.record(1, 0)
    rate.record(1, 999)
    assert rate.sample_count == 1
    rate.record(1, 1_000)
    assert rate.sample_count == 2
    # A new sample starts at its first event, not on a 1 s grid.
    rate.record(1, 1_999)
    assert rate.sample_count == 2
    rate.record(1, 2_000)
    assert rate.sample_count == 3


def test_warm_span_is_the_age_of_the_oldest_live_sample() -> None:
    rate = SampledRate()
    for second in range(21):
        rate.record(1, second * 1_000)
    # The t=9 s sample's last event is exactly 11 s old at t=20 s: obsolete.  The oldest
    # live sample started at 10 s: 11 events over a 10 s span.
    assert rate.window_size_ms(20_000) == 10_000
    assert rate.rate(20_000) == pytest.approx(1.1)
    # Half a second later the span has grown, still no correction (10 full windows).
    assert rate.window_size_ms(20_500) == 10_500


def test_a_sample_overlapping_the_horizon_is_kept_until_its_last_event_expires() -> None:
    rate = SampledRate()
    rate.record(100, 0)
    rate.record(100, 900)    # same sample, last event at 900
    rate.record(1, 11_000)
    # At 11 500 the first sample started 11.5 s ago but its last event is 10.6 s old.
    assert rate.window_size_ms(11_500) == 11_500
    assert rate.rate(11_500) == pytest.approx(201 / 11.5)
    # At 11 900 its last event is 11 s old: purged, the span is cold again.
    assert rate.rate(11_900) == pytest.approx(1 / 10.9)


def test_idle_gap_longer_than_the_window_forgets_everything() -> None:
    rate = SampledRate()
    for ms in range(0, 3_000, 100):
        rate.record(1_000, ms)
    assert rate.rate(3_000) > 0
    assert rate.rate(30_000) == 0.0
    rate.record(500, 30_000)
    # All obsolete samples were reset to start at 30 s: cold span of 10 s again.
    assert rate.window_size_ms(30_000) == 10_000
    assert rate.rate(30_000) == pytest.approx(50.0)


def test_many_samples_reuse_a_ring_of_n_plus_one_slots() -> None:
    rate = SampledRate()
    for ms in range(0, 60_000, 100):
        rate.record(100, ms)          # 1 000 units/s for a minute
        assert rate.sample_count <= 12
    assert rate.sample_count == 12
    # Span of a steadily fed ring: between N and N+1 windows.
    assert 11_000 <= rate.window_size_ms(60_000) < 12_000
    assert rate.rate(60_000) == pytest.approx(1_000.0, rel=0.01)


def test_clock_stepping_back_less_than_a_window_truncates_like_java() -> None:
    rate = SampledRate()
    rate.record(1_000, 10_000)
    rate.record(1_000, 9_500)          # into the current sample
    assert rate.sample_count == 1
    # elapsed = -500; Java's -500 / 1000 == 0, so 10 windows are added: 9 500 ms.
    assert rate.window_size_ms(9_500) == 9_500
    assert rate.rate(9_500) == pytest.approx(2_000 / 9.5)


def test_clock_stepping_back_several_windows_keeps_a_positive_span() -> None:
    rate = SampledRate()
    rate.record(1_000, 10_000)
    # elapsed = -2 500: Java truncates to -2 (floor would give -3), adding 12 windows.
    assert rate.window_size_ms(7_500) == 9_500
    assert rate.rate(7_500) == pytest.approx(1_000 / 9.5)
    # Even a huge step back leaves a span within (N-2, N-1] windows.
    assert 9_000 < rate.window_size_ms(-1_000_000) <= 10_000


def test_time_returning_forward_after_a_backward_step_resumes_normally() -> None:
    rate = SampledRate()
    rate.record(1_000, 10_000)
    rate.record(1_000, 9_000)
    rate.record(1_000, 11_000)         # 1 s after the sample's start: new sample
    assert rate.sample_count == 2
    assert rate.rate(11_000) == pytest.approx(3_000 / 10.0)


def test_negative_record_takes_a_value_back() -> None:
    rate = SampledRate()
    rate.record(700, 0)
    rate.record(5_000, 2_000)
    rate.record(-5_000, 2_000)
    assert rate.rate(2_000) == pytest.approx(700 / 10.0)


def test_custom_window() -> None:
    rate = SampledRate(QuotaWindow(samples=3, window_ms=500))
    rate.record(100, 0)
    assert rate.window_size_ms(0) == 1_000
    assert rate.rate(0) == pytest.approx(100.0)
    assert rate.rate(1_500) == 0.0     # last event 3 x 500 ms old


@pytest.mark.parametrize(("samples", "window_ms"), [(1, 1_000), (0, 1_000), (11, 0)])
def test_invalid_windows_are_rejected(samples: int, window_ms: int) -> None:
    with pytest.raises(ValueError):
        QuotaWindow(samples, window_ms)
