"""``follower.replication.throttled.rate`` and ``leader.replication.throttled.rate``: a byte
budget for throttled replica fetches (the follower's, and the leader's answers to them:
:mod:`brokerd.replication.leader_throttle`).

Kafka throttles only the partitions being moved (this broker is one of the topic's
``adding_replicas``) so a reassignment cannot starve ordinary replication.  A token bucket
refilled at ``rate`` bytes/s, holding at most one second's worth: the fetcher asks for
the current allowance before a fetch and charges what arrived after it.  A leader may
return one batch larger than asked, so the balance can go negative and then pauses the
throttled partitions until it refills.  Pure: the caller passes ``now`` (seconds).
"""

from __future__ import annotations


class ByteRateLimit:
    """A token bucket of bytes; ``rate <= 0`` means unlimited."""

    def __init__(self, rate: float = 0.0, now: float = 0.0) -> None:
        self.rate = rate
        self._tokens = rate
        self._updated = now

    def set_rate(self, rate: float, now: float) -> None:
        self._refill(now)
        self.rate = rate
        self._tokens = min(self._tokens, rate)

    def allowance(self, now: float, wanted: int) -> int:
        """How many of ``wanted`` bytes may be fetched now (0: wait)."""
        if self.rate <= 0:
            return wanted
        self._refill(now)
        return max(0, min(wanted, int(self._tokens)))

    def exhausted(self, now: float) -> bool:
        """Nothing left to spend (Kafka's ``isQuotaExceeded``); never when unlimited."""
        return self.allowance(now, 1) == 0

    def charge(self, nbytes: int, now: float) -> None:
        if self.rate > 0:
            self._refill(now)
            self._tokens -= nbytes

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self._updated)
        self._updated = now
        self._tokens = min(self.rate, self._tokens + elapsed * self.rate)
