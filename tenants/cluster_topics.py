"""Bring topics created or deleted over the Kafka protocol into the control plane (cluster → database).

A tenant's client may CreateTopics, CreatePartitions and DeleteTopics itself (brokerd maps
its names to ``<slug>.<name>`` and enforces the plan's partition limit).  ``discover`` —
Celery beat runs it every ``TOPIC_DISCOVERY_INTERVAL_S`` — reads ``/brokers/topics`` (only
reads: brokerd owns those nodes) and makes the database agree, so the REST API, the console
and the plan's partition count see every topic once, however it was created:

- a tenant topic the database lacks is adopted (a ``Topic`` row, audit ``topic.discover``);
- a row whose topic was on the cluster and is gone is forgotten (audit ``topic.forget``);
- partitions added over Kafka raise the row's count; the observed placement is refreshed.

Topics deleted here and not yet deleted by the brokers (``TopicDeletion``) are left alone, and
a row not yet on the cluster (``assignment`` None) is ``topic_sync``'s to create.

Ordering makes the races harmless: rows, then tombstones, are read *before* ZooKeeper
(after a ``sync``), so a topic created here in between is seen as a row or not at all, and a
row marked as on the cluster was created before the listing that must contain it.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.db import IntegrityError, transaction
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from . import znodes
from .audit import record
from .models import TOPIC_NAME_VALIDATOR, Tenant, Topic, TopicDeletion

log = logging.getLogger(__name__)


def read_cluster_topics(zk: KazooClient, slugs: set[str]) -> dict[str, dict[str, Any]]:
    """``/brokers/topics/<t>`` of every topic named ``<slug>.<name>`` for a slug in ``slugs``,
    read in one pipelined round (``get_async``), as ``{topic: node JSON}``."""
    zk.sync(znodes.TOPICS_ZNODE)
    names = zk.get_children(znodes.TOPICS_ZNODE) if zk.exists(znodes.TOPICS_ZNODE) else []
    wanted = [n for n in names if n.partition(".")[0] in slugs and n.partition(".")[2]]
    pending = {name: zk.get_async(znodes.topic_znode(name)) for name in wanted}
    found = {}
    for name, result in pending.items():
        try:
            data, _ = result.get()
        except NoNodeError:
            continue  # deleted since the listing
        try:
            found[name] = json.loads(data)
        except ValueError:
            log.warning("ignoring topic %s: its znode is not JSON", name)
    return found


def _replicas(node: dict[str, Any]) -> dict[str, list[int]]:
    return {str(p): [int(b) for b in r] for p, r in (node.get("partitions") or {}).items()}


def _adopt(tenant: Tenant, name: str, node: dict[str, Any]) -> Topic | None:
    """A row for a topic a Kafka client created; None if a row appeared meanwhile (or the name
    does not fit the control plane's rules, e.g. longer than 200 characters)."""
    own = name.partition(".")[2]
    try:
        TOPIC_NAME_VALIDATOR(own)
    except Exception:
        log.warning("not adopting topic %s: its name does not fit the control plane's rules", name)
        return None
    assignment = _replicas(node)
    factor = min((len(r) for r in assignment.values()), default=1)
    topic_id = znodes.uuid_from_kafka(node["topic_id"]) if node.get("topic_id") else None
    try:
        with transaction.atomic():
            topic = Topic.objects.create(
                tenant=tenant, name=own, partitions=len(assignment), replication_factor=factor,
                assignment=assignment, **({"topic_id": topic_id} if topic_id else {}))
            record(None, tenant, "topic.discover", name, partitions=len(assignment),
                   replication_factor=factor, created_by="a Kafka client")
    except IntegrityError:
        return None
    return topic


def discover(zk: KazooClient) -> list[str]:
    """Make the database's topics agree with the cluster's; report each change."""
    rows = {t.physical_name: t for t in Topic.objects.select_related("tenant")}
    tombstones = set(TopicDeletion.objects.values_list("topic", flat=True))
    tenants = {t.slug: t for t in Tenant.objects.all()}
    cluster = read_cluster_topics(zk, set(tenants))
    changes = []
    for name, node in sorted(cluster.items()):
        if name in tombstones:
            continue
        row = rows.get(name)
        if row is None:
            if _adopt(tenants[name.partition(".")[0]], name, node) is not None:
                changes.append(f"discovered topic {name}")
            continue
        assignment = _replicas(node)
        if row.assignment != assignment or row.partitions < len(assignment):
            grown = len(assignment) > row.partitions
            with transaction.atomic():
                Topic.objects.filter(pk=row.pk).update(
                    assignment=assignment, partitions=max(row.partitions, len(assignment)))
                if grown:
                    record(None, row.tenant, "topic.grow", name, partitions=len(assignment),
                           created_by="a Kafka client")
            if grown:
                changes.append(f"topic {name} grew to {len(assignment)} partitions")
    for name, row in sorted(rows.items()):
        if name not in cluster and row.assignment is not None and name not in tombstones:
            with transaction.atomic():
                deleted, _ = Topic.objects.filter(pk=row.pk, assignment__isnull=False).delete()
                if deleted:
                    record(None, row.tenant, "topic.forget", name, deleted_by="the cluster")
            if deleted:
                changes.append(f"forgot topic {name} (deleted on the cluster)")
    return changes
