"""The sampled rate behind every quota: Kafka's ``Rate`` over a ``WindowedSum`` ``SampledStat``.

Why replicate Kafka to the millisecond: operators tune ``quota.window.num`` and
``quota.window.size.seconds`` with Kafka's behaviour in mind, and clients' back-off is
calibrated against the throttle times a Kafka broker computes from this rate.  This follows
the current Kafka design (apache/kafka PR #15889, 2024: samples are expired by their *last
event*, and the ring keeps one extra sample so a sample overlapping the window edge is not
dropped early).

Model.  Time is cut into samples of ``window_ms`` (1 s).  A sample opens at the first event
that does not fit in the current one (``now - start >= window_ms``), so samples start at event
times, not on a grid.  The ring holds at most ``samples + 1`` (12) samples; opening a new one
recycles the slot after the current one.  A sample whose last event is ``samples x window_ms``
(11 s) old or more is *obsolete*: it is reset to an empty sample starting at ``now`` whenever
the rate is measured.

Rate at ``now`` = (sum of all samples) / (window span in seconds), where the span is derived in
:meth:`SampledRate.window_size_ms`.

Pure and not thread-safe: every method takes ``now_ms`` (a monotonic millisecond clock the
caller owns); there is no hidden clock and no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

# quota.window.num: 10 whole windows of history + the one currently filling.
DEFAULT_SAMPLES = 11
# quota.window.size.seconds: one second per sample, so the rate reacts within a second.
DEFAULT_WINDOW_MS = 1000
# Why a broker may assume less cold history than Kafka (``QuotaWindow.cold_start_windows``):
# Kafka assumes N-1 windows (10 s), so a new or idle client may burst 10 s worth of its quota
# at line rate before its first throttle; because that burst fills ONE sample, its expiry
# 11 s later opens room for the next one, and a greedy client runs in an 11 s sawtooth of
# ~10x spikes instead of at its quota — the neighbour noise quotas exist to prevent.  One
# window keeps the rate finite on a first request (the reason any history is assumed) while
# allowing a cold burst of one window's worth.  The default stays Kafka's.


@dataclass(frozen=True)
class QuotaWindow:
    """``quota.window.num`` and ``quota.window.size.seconds`` (in ms) as one value.

    ``cold_start_windows`` is the empty history assumed for a cold sensor, in windows; None
    is Kafka's ``samples - 1`` (see the comment above this class for why a broker may want 1).

    Invariant: ``samples >= 2`` (one full window of history besides the current one),
    ``1 <= cold_windows <= samples - 1`` (at least one window keeps the span positive) and
    ``window_ms >= 1``.
    """

    samples: int = DEFAULT_SAMPLES
    window_ms: int = DEFAULT_WINDOW_MS
    cold_start_windows: int | None = None

    @property
    def cold_windows(self) -> int:
        """The assumed cold history in windows (Kafka's ``samples - 1`` unless set)."""
        if self.cold_start_windows is None:
            return self.samples - 1
        return self.cold_start_windows

    def __post_init__(self) -> None:
        if self.samples < 2:
            raise ValueError(f"quota.window.num must be at least 2, got {self.samples}")
        if self.window_ms < 1:
            raise ValueError(f"quota window size must be at least 1 ms, got {self.window_ms}")
        if not 1 <= self.cold_windows <= self.samples - 1:
            raise ValueError(f"cold_start_windows must be in [1, {self.samples - 1}], "
                             f"got {self.cold_start_windows}")


@dataclass
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0

    def reset(self, now_ms: int) -> None:
        self.start_ms = now_ms
        self.last_event_ms = now_ms
        self.value = 0.0


def _div_toward_zero(numerator: int, denominator: int) -> int:
    """Java's integer division (truncates toward zero; Python's ``//`` floors).

    It matters only when the clock has stepped backwards and the elapsed time is negative,
    and there it changes the span by a whole window, so Kafka's rounding is kept.
    """
    quotient = abs(numerator) // denominator
    return quotient if numerator >= 0 else -quotient


class SampledRate:
    """A rate per second over ``window.samples`` samples of ``window.window_ms`` each."""

    def __init__(self, window: QuotaWindow | None = None) -> None:
        self.window = window or QuotaWindow()
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        """Add ``value`` (bytes, or request-time percent; negative to take a value back).

        The current sample takes the value unless it is complete (``now - start >=
        window_ms``); then the next ring slot is reset (or appended) to start at ``now``.  A
        clock that stepped backwards makes ``now - start`` negative, so the value lands in
        the current sample, as in Kafka.  Recording never purges: obsolete samples are reset
        when the rate is next measured.
        """
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.last_event_ms = now_ms

    def rate(self, now_ms: int) -> float:
        """Sum of the live samples divided by :meth:`window_size_ms`, per second."""
        self._purge_obsolete(now_ms)
        total = sum(sample.value for sample in self._samples)
        return total / (self.window_size_ms(now_ms) / 1000.0)

    def window_size_ms(self, now_ms: int) -> int:
        """The span the rate divides by; also the ``W`` of the throttle formula.

        Derivation (N = samples, W = window_ms).  Once warm, the span is simply the time
        since the oldest live sample started, ``elapsed = now - oldest.start``; because
        obsolete samples are purged by their *last event*, a live sample may have started up
        to one window before the N-window horizon, so a warm span lies in [N-1, N+1) windows.

        Cold (the first seconds of a sensor, or the first event after an idle gap that
        purged every sample), ``elapsed`` is tiny and ``sum / elapsed`` would explode on the
        first request.  Like Kafka we assume the missing history exists and was empty:
        C = ``window.cold_windows`` windows of it (Kafka's default: N-1): if fewer than C
        whole windows have elapsed (``full = elapsed / W``, truncated), the missing
        ``(C-full) x W`` is added.  So the span is ``C x W + (elapsed mod W)`` until C windows
        have passed, never less than C windows: 10 s plus the fraction of the current second
        with Kafka's defaults.  Example: one event of 10 000 bytes at t=0 measured at t=500
        gives 10 000 / 10.5 s = 952 B/s (C = 10) or 10 000 / 1.5 s = 6 667 B/s (C = 1), not
        20 000 B/s.

        Clock stepped backwards: ``elapsed`` is negative, ``full`` truncates toward zero
        (Java), and the same correction gives a span in (C-1, C] windows — positive (at
        least 1 ms, as times are whole ms) for C >= 1, so a backwards step never divides by
        zero.

        Measuring an empty rate creates an empty sample at ``now`` (Kafka's ``oldest``
        does), which is why this method is not a pure query.
        """
        self._purge_obsolete(now_ms)
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        oldest_start = min(sample.start_ms for sample in self._samples)
        elapsed = now_ms - oldest_start
        full_windows = _div_toward_zero(elapsed, self.window.window_ms)
        min_full_windows = self.window.cold_windows
        if full_windows < min_full_windows:
            elapsed += (min_full_windows - full_windows) * self.window.window_ms
        return max(elapsed, 1)  # 0 only for a 1 ms window stepped back by exactly 1 ms

    @property
    def sample_count(self) -> int:
        """How many ring slots are in use (at most ``samples + 1``); for tests and metrics."""
        return len(self._samples)

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        # One slot more than ``samples``: the oldest sample may still overlap the window
        # (its last event is recent enough) and must not be recycled before it is obsolete.
        self._current = (self._current + 1) % (self.window.samples + 1)
        if self._current >= len(self._samples):
            sample = _Sample(now_ms, now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def _purge_obsolete(self, now_ms: int) -> None:
        expire_age_ms = self.window.samples * self.window.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_age_ms:
                sample.reset(now_ms)
