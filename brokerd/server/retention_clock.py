"""The wall clock that deletion decisions read: retention by time, producer-id expiry,
deleted-file delays.

Why not ``time.time()``: a wall clock that steps forward (a bad NTP server, an operator's
``date -s``) would make every record look older than it is, and retention would delete
data younger than its ``retention.ms`` by the records' own clock — unrecoverably.  So this
clock follows the system clock at once when it is behind (deleting later is safe) and
catches up at most ``SLEW`` (1 %) faster than real time, measured on the monotonic clock,
when the system clock is ahead.  A forward step of an hour therefore moves retention by
about 36 s per hour of uptime instead of an hour at once; a legitimate correction is
followed, slowly.  Quota windows and throttles never read wall time at all (they use the
monotonic clock).

Pure: the caller passes both clocks' readings.
"""

from __future__ import annotations

SLEW = 0.01


class RetentionClock:
    """Wall-clock milliseconds, immune to forward steps of the system clock."""

    def __init__(self, wall_ms: int, monotonic_ms: int) -> None:
        self._now = wall_ms
        self._monotonic = monotonic_ms

    def now_ms(self, wall_ms: int, monotonic_ms: int) -> int:
        elapsed = max(monotonic_ms - self._monotonic, 0)
        steady = self._now + elapsed
        if wall_ms <= steady:
            now = wall_ms  # behind, or stepped back: follow (deletions only come later)
        else:
            now = min(wall_ms, steady + int(elapsed * SLEW))
        self._now, self._monotonic = now, monotonic_ms
        return now
