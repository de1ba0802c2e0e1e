"""brokerd.replication.leader_throttle: which partitions a leader throttles, and when it
leaves one out of a follower's answer (Kafka's leader ReplicationQuotaManager)."""

from __future__ import annotations

from brokerd.replication.leader_throttle import LeaderThrottle, is_throttled, throttled_partitions


def test_entries_naming_this_broker_or_a_wildcard_throttle() -> None:
    assert throttled_partitions("0:1, 0:2,1:2,3:1", 1) == frozenset({0, 3})
    assert throttled_partitions("0:1,0:2", 3) == frozenset()
    assert throttled_partitions("*", 7) is None
    assert throttled_partitions("x:1,2:y,,4:1", 1) == frozenset({4})  # malformed skipped
    config = {"leader.replication.throttled.replicas": "0:1,2:1"}
    assert is_throttled(config, 0, 1) and is_throttled(config, 2, 1)
    assert not is_throttled(config, 1, 1) and not is_throttled(config, 0, 2)
    assert is_throttled({"leader.replication.throttled.replicas": "*"}, 9, 5)
    assert not is_throttled({}, 0, 1)
    assert not is_throttled({"leader.replication.throttled.replicas": ""}, 0, 1)


def test_unlimited_never_holds_back() -> None:
    throttle = LeaderThrottle()
    throttle.record(10**9, 0.0)
    assert not throttle.active and not throttle.holds_back(True, False, 0.0)
    throttle.limit.set_rate(1000, 0.0)
    assert throttle.active


def test_a_spent_budget_holds_back_only_throttled_out_of_sync_followers() -> None:
    throttle = LeaderThrottle()
    throttle.limit.set_rate(1000, 0.0)  # the bucket starts empty and fills
    assert throttle.holds_back(True, False, 0.0)
    assert not throttle.holds_back(True, False, 5.0)  # at most one second's budget (1000)
    throttle.record(1500, 5.0)  # one answer may exceed it: the balance goes negative
    assert throttle.holds_back(True, False, 5.0)
    assert not throttle.holds_back(True, True, 5.0)  # in-sync followers are never held
    assert not throttle.holds_back(False, False, 5.0)  # nor unthrottled partitions
    assert throttle.holds_back(True, False, 5.5)  # refilled to 0: still spent
    assert not throttle.holds_back(True, False, 5.6)  # refilled past 0


def test_the_rate_is_shared_and_averages_out() -> None:
    """Two throttled partitions charging 100-byte answers at 1000 B/s: over ten seconds
    about 10 000 bytes get through, whichever partition asks."""
    throttle = LeaderThrottle()
    throttle.limit.set_rate(1000, 0.0)
    sent, now = 0, 0.0
    while now < 10.0:
        for _partition in (0, 1):
            if not throttle.holds_back(True, False, now):
                throttle.record(100, now)
                sent += 100
        now += 0.01
    assert 9_900 <= sent <= 10_200  # ten seconds' refill (the bucket starts empty)
