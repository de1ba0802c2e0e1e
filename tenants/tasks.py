"""Celery controller tasks that publish the control plane's state to ZooKeeper.

Each task names an entity, not a change: it publishes whatever the database holds for it
when it runs (see ``publication``), so tasks are idempotent and retries are harmless.
ZooKeeper errors (connection loss, session expiry), a busy or unreachable database and "no
brokers to place a topic on" are retried with exponential backoff.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import OperationalError
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from . import publication, reassignments
from .zookeeper import client

log = logging.getLogger(__name__)
RETRYABLE = (KazooException, KazooTimeoutError, ValueError, OSError, OperationalError)
RETRY = {"autoretry_for": RETRYABLE, "retry_backoff": 1, "retry_backoff_max": 30, "max_retries": 20}


def report(changes: list[str]) -> list[str]:
    for line in changes:
        log.info("zookeeper: %s", line)
    return changes


@shared_task(**RETRY)
def publish_tenant(slug: str) -> list[str]:
    return report(publication.sync_tenant(client(), slug))


@shared_task(**RETRY)
def publish_api_key(key: str) -> list[str]:
    return report(publication.sync_api_key(client(), key))


@shared_task(**RETRY)
def publish_topic(physical_name: str) -> list[str]:
    return report(publication.sync_topic(client(), physical_name))


@shared_task(**RETRY)
def publish_acl_resource(pattern_type: str, resource_type: str, resource_name: str) -> list[str]:
    return report(publication.sync_acl_resource(client(), (pattern_type, resource_type, resource_name)))


@shared_task(**RETRY)
def start_reassignment(reassignment_id: int) -> list[str]:
    return report(reassignments.start(client(), reassignment_id))


@shared_task(**RETRY)
def request_preferred_election(partitions: list[list]) -> list[str]:
    wanted = [(str(topic), int(partition)) for topic, partition in partitions]
    changed = reassignments.request_election(client(), wanted)
    return report([f"requested preferred leaders for {len(wanted)} partition(s)"] if changed else [])


@shared_task
def track_reassignments() -> list[str]:
    """Periodic (beat): not retried, a failed round is simply followed by the next one."""
    return report(reassignments.track(client()))
