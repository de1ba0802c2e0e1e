"""Throttle arithmetic: how long a client that went over its quota must stay silent.

Pure functions of numbers; the rate and the window they are fed come from
:class:`brokerd.quota.rate.SampledRate`.  Kafka never answers a quota violation with an error:
the broker replies at once with ``throttle_time_ms`` (KIP-219) and then mutes the connection
for that long.
"""

from __future__ import annotations

import math


def throttle_time_ms(observed_rate: float, quota: float, window_ms: float) -> int:
    """Milliseconds until the rate falls back to the quota if the client sends nothing more.

    Derivation.  The rate is ``O = S / W``: ``S`` units recorded over a span of ``W`` ms.  If
    the client stays silent for ``X`` ms, ``S`` is unchanged and the span grows to ``W + X``,
    so the rate becomes ``S / (W + X)``.  Setting that equal to the quota ``T``::

        S / (W + X) = T  =>  X = S / T - W = O * W / T - W = (O - T) / T * W

    E.g. twice the quota over an 11 s span (``O = 2T``, ``W = 11000``) gives
    ``X = (2T - T) / T * 11000 = 11000`` ms: doubling the span halves the rate.  ``X`` is
    rounded half up (Java's ``Math.round``), and is 0 while ``O <= T`` (Kafka's upper-bound
    quota accepts a rate equal to the bound).
    """
    if quota <= 0:
        raise ValueError(f"a quota must be positive, got {quota}")
    if observed_rate <= quota:
        return 0
    return math.floor((observed_rate - quota) / quota * window_ms + 0.5)


def fetch_size_cap(quota: float, samples: int, window_s: float) -> int:
    """The most bytes one fetch response may carry for a client with byte-rate ``quota``.

    ``quota x (samples - 1) x window_s`` is everything the client may read in the N-1 whole
    windows the rate assumes as history.  A larger response would on its own bring even an
    idle client to about its quota (the cold span is N-1 windows plus a fraction of the current
    one), so it would keep being throttled, answered empty and never delivered.  Truncated to
    whole bytes as Kafka does.  With the defaults a 10 KiB/s quota still allows 100 KiB per
    fetch.
    """
    return int(quota * (samples - 1) * window_s)


def combined_throttle_ms(*throttles_ms: int) -> int:
    """The throttle one response carries when several quotas (byte rate, request time) apply.

    A connection is muted once, so the longest throttle wins; 0 when none applies.
    """
    return max(throttles_ms, default=0)
