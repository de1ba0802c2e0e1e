"""The beat task: one snapshot at a time, and a broker outage is a skipped snapshot."""

from __future__ import annotations

import pytest
import redis
from django.conf import settings

from dashboard import snapshots, tasks
from dashboard.kafka import KafkaRequestFailed


def test_a_running_snapshot_makes_the_next_one_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[int] = []

    def snapshot_all() -> dict[str, float]:
        runs.append(1)
        return {"total_s": 0.0}

    monkeypatch.setattr(snapshots, "snapshot_all", snapshot_all)
    lock = redis.Redis.from_url(settings.REDIS_URL).lock(tasks.snapshot_lock_name(), timeout=10)
    assert lock.acquire(blocking=False)
    try:
        tasks.snapshot_consumer_lag()
        assert runs == []
    finally:
        lock.release()
    tasks.snapshot_consumer_lag()
    assert runs == [1]


def test_unreachable_brokers_skip_the_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable() -> dict[str, float]:
        raise KafkaRequestFailed("timed out")

    monkeypatch.setattr(snapshots, "snapshot_all", unreachable)
    tasks.snapshot_consumer_lag()  # logged, not raised: the next beat tries again
    lock = redis.Redis.from_url(settings.REDIS_URL).lock(tasks.snapshot_lock_name(), timeout=10)
    assert lock.acquire(blocking=False)  # and the lock was released
    lock.release()
