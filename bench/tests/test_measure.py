"""CPU-share and percentile arithmetic of bench.measure."""

from __future__ import annotations

import os
import time

import pytest

from bench.measure import (
    CLOCK_TICKS_PER_SECOND,
    CpuSample,
    Window,
    cpu_ticks_from_stat,
    machine_busy_ticks_from_stat,
    megabytes_per_second,
    own_cpu_seconds,
    percentile,
    process_cpu_seconds,
    process_rss_bytes,
    rss_bytes_from_status,
)


def stat_line(comm: str, utime: int, stime: int) -> str:
    # Fields 3..13 are placeholders; utime and stime are fields 14 and 15.
    after_comm = ["S"] + [str(n) for n in range(4, 14)] + [str(utime), str(stime), "99", "98"]
    return f"4242 ({comm}) " + " ".join(after_comm)


def test_ticks_are_utime_plus_stime() -> None:
    assert cpu_ticks_from_stat(stat_line("python", 700, 55)) == 755


def test_command_name_with_spaces_and_parentheses_does_not_shift_fields() -> None:
    assert cpu_ticks_from_stat(stat_line("a) b (c", 3, 4)) == 7


def test_proc_reading_of_this_process_tracks_os_times() -> None:
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:
        pass
    from_proc = process_cpu_seconds(os.getpid())
    from_times = own_cpu_seconds()
    assert from_proc >= 0.2
    assert abs(from_proc - from_times) <= 2 / CLOCK_TICKS_PER_SECOND


def test_window_shares_are_cpu_seconds_over_wall_seconds() -> None:
    window = Window.between(CpuSample(10.0, 1.0, 5.0, 100.0), CpuSample(14.0, 3.0, 9.0, 108.0))
    assert window.seconds == 4.0
    assert window.client_cpu_share == 0.5
    assert window.broker_cpu_share == 1.0
    assert window.other_cpu_share == 0.5  # 8 s busy over 4 s = 2 cores, minus 1.5


def test_other_share_never_negative_when_counters_disagree() -> None:
    window = Window.between(CpuSample(0.0, 0.0, 0.0, 0.0), CpuSample(1.0, 0.6, 0.6, 1.1))
    assert window.other_cpu_share == 0.0


def test_machine_busy_ticks_exclude_idle_and_iowait() -> None:
    proc_stat = "cpu  100 2 30 5000 70 4 5 6 0 0\ncpu0 50 1 15 2500 35 2 2 3 0 0\n"
    assert machine_busy_ticks_from_stat(proc_stat) == 100 + 2 + 30 + 4 + 5 + 6


def test_empty_window_is_rejected() -> None:
    with pytest.raises(ValueError):
        Window.between(CpuSample(1.0, 0, 0, 0), CpuSample(1.0, 0, 0, 0))


def test_nearest_rank_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.50) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 1.0) == 100.0
    assert percentile(values, 0.0) == 1.0
    assert percentile([7.0], 0.99) == 7.0
    # With 10 values, p99 is the maximum: ceil(0.99 * 10) = 10.
    assert percentile([float(v) for v in range(10)], 0.99) == 9.0


@pytest.mark.parametrize("fraction", [-0.1, 1.5])
def test_percentile_rejects_fractions_outside_unit_interval(fraction: float) -> None:
    with pytest.raises(ValueError):
        percentile([1.0], fraction)


def test_percentile_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError):
        percentile([], 0.5)


def test_megabytes_are_decimal() -> None:
    assert megabytes_per_second(3_000_000, 2.0) == 1.5


def test_rss_is_the_vmrss_line_in_bytes() -> None:
    assert rss_bytes_from_status("Name:\tpython\nVmPeak:\t 9 kB\nVmRSS:\t  2048 kB\n") == 2048 * 1024


def test_rss_of_a_status_without_vmrss_is_an_error() -> None:
    with pytest.raises(ValueError):
        rss_bytes_from_status("Name:\tkthreadd\nState:\tS (sleeping)\n")


def test_rss_of_this_process_is_plausible() -> None:
    assert 1_000_000 < process_rss_bytes(os.getpid()) < 10_000_000_000
