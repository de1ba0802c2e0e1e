"""``leader.replication.throttled.rate``: the leader's side of a reassignment throttle.

Kafka's leader ReplicationQuotaManager, as pure rules (the caller passes ``now``, seconds):

* which partitions are throttled on this leader: the topic config
  ``leader.replication.throttled.replicas``, a list of ``partition:broker`` entries (the
  entries naming this broker count) or ``*`` (every partition of the topic);
* whether a follower's fetch of one is held back: only when the follower is not in the ISR
  and the shared budget is spent, so in-sync followers (and every unthrottled partition)
  replicate as before and a reassignment cannot shrink an ISR;
* what is charged: the bytes of every throttled partition the leader answered with,
  whoever fetched them (Kafka's ``sizeOfThrottledPartitions``).

A held-back partition is simply left out of the answer's records, so the follower fetches it
again later.  The budget is the same token bucket as the follower's
(:class:`~brokerd.replication.throttle.ByteRateLimit`), shared by all throttled partitions.
"""

from __future__ import annotations

from functools import lru_cache

from brokerd.replication.throttle import ByteRateLimit

TOPIC_CONFIG = "leader.replication.throttled.replicas"
ALL_REPLICAS = "*"


@lru_cache(maxsize=1024)
def throttled_partitions(value: str, broker_id: int) -> frozenset[int] | None:
    """The partitions ``value`` throttles on ``broker_id`` (None: all of them).  Malformed
    entries are ignored (topic config validation refuses them before they are stored)."""
    if value.strip() == ALL_REPLICAS:
        return None
    partitions = set()
    for entry in value.split(","):
        partition, _, broker = entry.strip().partition(":")
        try:
            if int(broker) == broker_id:
                partitions.add(int(partition))
        except ValueError:
            continue
    return frozenset(partitions)


def is_throttled(topic_config: dict[str, str], partition: int, broker_id: int) -> bool:
    value = topic_config.get(TOPIC_CONFIG)
    if not value:
        return False
    partitions = throttled_partitions(value, broker_id)
    return partitions is None or partition in partitions


class LeaderThrottle:
    """The leader's shared byte budget for throttled partitions (``rate <= 0``: none)."""

    def __init__(self) -> None:
        self.limit = ByteRateLimit()

    @property
    def active(self) -> bool:
        """A rate is set (else nothing is throttled, whatever the topics list)."""
        return self.limit.rate > 0

    def holds_back(self, throttled: bool, follower_in_sync: bool, now: float) -> bool:
        """Leave this partition out of a follower's answer now?"""
        return throttled and not follower_in_sync and self.limit.exhausted(now)

    def record(self, nbytes: int, now: float) -> None:
        """Charge the throttled partitions' bytes of an answer just sent."""
        if nbytes:
            self.limit.charge(nbytes, now)
