"""Periodic task: the consumer-lag snapshot (scheduled by Celery beat, see settings)."""

from __future__ import annotations

import logging

import redis
from celery import shared_task
from django.conf import settings

from . import snapshots
from .kafka import KafkaRequestFailed

log = logging.getLogger(__name__)


def snapshot_lock_name() -> str:
    """One lock per deployment, named after its task queue (test runs each have their own)."""
    return f"{settings.CELERY_TASK_DEFAULT_QUEUE}:lag-snapshot"


@shared_task(ignore_result=True)
def snapshot_consumer_lag() -> None:
    """Take one snapshot unless another is still running (a slow snapshot must not pile up
    behind itself: the next beat simply finds the lock taken and skips)."""
    lock = redis.Redis.from_url(settings.REDIS_URL).lock(
        snapshot_lock_name(), timeout=max(60.0, 10 * settings.LAG_SNAPSHOT_INTERVAL_S),
        blocking=False)
    if not lock.acquire():
        return
    try:
        timings = snapshots.snapshot_all()
        log.debug("lag snapshot took %.3f s", timings["total_s"])
    except KafkaRequestFailed as exc:
        log.warning("lag snapshot skipped: %s", exc)
    finally:
        lock.release()
