"""Rate limiting of failed-login log lines: one line per (peer ip, username) per interval.

Why: every failed authentication must be logged, but a client retrying a wrong secret in a
loop (or an attacker guessing) would otherwise flood the log.  The first failure of a key is
reported at once; later ones within ``interval_s`` are only counted, and the next report
carries that count, so no failure goes unaccounted.  Pure: the clock is injected and the
caller writes the line (quote the username with ``%r``: it is attacker-controlled).

Memory is bounded: at most ``max_keys`` keys are tracked.  When full, keys whose last report
is older than the interval are forgotten, with any count not yet reported (the price of a
bound); if the table is still full, new keys share one overflow key ``("*", "*")`` (one
slot beyond ``max_keys``), so a flood of distinct usernames still yields one line per
interval.  Not thread-safe: the event loop thread only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

OVERFLOW_KEY = ("*", "*")


@dataclass(frozen=True, slots=True)
class FailureReport:
    """A failure to log now, plus how many failures of the same key were not logged before it."""

    peer_ip: str
    username: str
    suppressed: int


@dataclass(slots=True)
class _KeyState:
    last_report: float
    suppressed: int


class LoginFailureLog:
    def __init__(self, interval_s: float = 60.0, *, max_keys: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if interval_s <= 0 or max_keys < 1:
            raise ValueError("interval_s and max_keys must be positive")
        self._interval_s = interval_s
        self._max_keys = max_keys
        self._clock = clock
        self._keys: dict[tuple[str, str], _KeyState] = {}

    def record_failure(self, peer_ip: str, username: str | None) -> FailureReport | None:
        """Count one failed login; a report if the caller should log a line now, else None."""
        now = self._clock()
        key = (peer_ip, username or "")
        state = self._keys.get(key)
        if state is None:
            key = self._make_room(key, now)
            state = self._keys.get(key)
        if state is None:
            self._keys[key] = _KeyState(now, 0)
            return FailureReport(*key, suppressed=0)
        if now - state.last_report < self._interval_s:
            state.suppressed += 1
            return None
        report = FailureReport(*key, suppressed=state.suppressed)
        state.last_report, state.suppressed = now, 0
        return report

    def _make_room(self, key: tuple[str, str], now: float) -> tuple[str, str]:
        """The key to count under: ``key`` if there is (or can be made) room, else overflow."""
        if len(self._keys) < self._max_keys:
            return key
        self._keys = {k: s for k, s in self._keys.items() if now - s.last_report < self._interval_s}
        return key if len(self._keys) < self._max_keys else OVERFLOW_KEY
