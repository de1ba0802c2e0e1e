"""The consumer-lag snapshot: ask the brokers, evaluate, store, prune, broadcast.

One snapshot covers every tenant: it lists all groups once and splits them by the namespace
prefix (a tenant slug has no dot, so ``<slug>.<group>`` splits at the first dot).  Only groups
and topics inside a tenant's namespace are shown to that tenant, with the prefix removed.
Groups that no longer exist on the cluster lose their row.  Both group types are read the same
way (committed offsets from OffsetFetch); a consumer-protocol (KIP-848) group's row adds its
epochs, and its members their epochs, target assignments and subscriptions.
"""

from __future__ import annotations

import functools
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction

from tenants.models import Tenant

from . import kafka, lag_heads, live
from .lag import (
    PartitionOffsets,
    evaluate_group,
    group_lag_from_json,
    group_lag_to_json,
    partition_lag,
)
from .lag_time import group_time, group_time_to_json
from .models import ConsumerGroupLag, LagSample, TopicThroughput
from .record_heads import Position
from .slo_alerts import evaluate_slos

Bounds = dict[kafka.TopicPartitionKey, tuple[int, int]]


@dataclass(frozen=True)
class ClusterSnapshot:
    """Everything one snapshot read from the brokers (physical names)."""

    groups: dict[str, kafka.GroupDescription]
    committed: dict[str, dict[kafka.TopicPartitionKey, int]]
    bounds: Bounds
    types: dict[str, str] = field(default_factory=dict)  # ListGroups v5: classic / consumer
    stable: dict[kafka.TopicPartitionKey, int] = field(default_factory=dict)  # last stable offsets
    heads: dict[Position, int] = field(default_factory=dict)  # waiting records' timestamps, ms
    # False when a broker's ListGroups failed: groups not listed are kept, not deleted (a
    # stopped broker once made the console forget every group it coordinated).
    groups_listed_completely: bool = True


def split_name(physical: str) -> tuple[str, str]:
    """``acme.orders`` → (``acme``, ``orders``)."""
    slug, _, name = physical.partition(".")
    return slug, name


def read_cluster(admin: kafka.AdminClient, slugs: set[str]) -> ClusterSnapshot:
    listing = kafka.list_groups(admin)
    types = {g: t for g, t in listing.types.items() if split_name(g)[0] in slugs}
    group_ids = list(types)
    committed = kafka.committed_offsets(admin, group_ids)
    partitions = {(topic, p) for topic, count in kafka.partition_counts(admin).items()
                  if split_name(topic)[0] in slugs for p in range(count)}
    for offsets in committed.values():
        partitions.update(offsets)
    return ClusterSnapshot(kafka.describe_groups(admin, group_ids), committed,
                           kafka.log_bounds(admin, sorted(partitions)), types,
                           kafka.stable_offsets(admin, sorted(partitions)),
                           groups_listed_completely=listing.complete)


def waiting_records(cluster: ClusterSnapshot) -> dict[str, set[Position]]:
    """Per group (physical id), where its oldest waiting record is on each partition it lags on."""
    waiting: dict[str, set[Position]] = {}
    for physical in set(cluster.committed) | set(cluster.groups):
        slug = split_name(physical)[0]
        waiting[physical] = {
            (f"{slug}.{offsets.topic}", offsets.partition,
             max(offsets.log_start, offsets.committed or 0))
            for offsets in observed_offsets(cluster.committed.get(physical, {}), cluster.bounds,
                                            _assigned(cluster.groups.get(physical)), slug)
            if partition_lag(offsets.committed, offsets.log_start, offsets.high_watermark) > 0}
    return waiting


def _assigned(description: kafka.GroupDescription | None) -> set[kafka.TopicPartitionKey]:
    return {tp for member in description.members for tp in member.assignment} \
        if description else set()


def observed_offsets(committed: dict[kafka.TopicPartitionKey, int], bounds: Bounds,
                     assigned: set[kafka.TopicPartitionKey], slug: str,
                     stable: dict[kafka.TopicPartitionKey, int] | None = None
                     ) -> list[PartitionOffsets]:
    """Every partition of the topics a group consumes (it committed on one of their partitions,
    or a member is assigned one), names without the tenant prefix; a partition without a commit
    has ``committed`` None (its lag counts from the log start).  Partitions whose offsets could
    not be read are left out."""
    topics = {topic for topic, _ in committed} | {topic for topic, _ in assigned}
    partitions = set(committed) | {tp for tp in bounds if tp[0] in topics}
    stable = stable or {}
    return [PartitionOffsets(split_name(t)[1], p, committed.get((t, p)), *bounds[(t, p)],
                             last_stable=stable.get((t, p)))
            for t, p in sorted(partitions) if split_name(t)[0] == slug and (t, p) in bounds]


def _local_partitions(partitions: Iterable[kafka.TopicPartitionKey], slug: str) -> list[list]:
    return [[split_name(t)[1], p] for t, p in partitions if split_name(t)[0] == slug]


def _members(description: kafka.GroupDescription | None, slug: str) -> list[dict]:
    """Members as stored and shown: topics without the tenant prefix (another tenant's never
    appear); consumer-protocol members add their epoch, target assignment and subscription."""
    if description is None:
        return []
    members = []
    for m in description.members:
        member: dict = {"member_id": m.member_id, "instance_id": m.instance_id,
                        "client_id": m.client_id, "host": m.host,
                        "assignment": _local_partitions(m.assignment, slug)}
        if description.group_type == kafka.CONSUMER:
            member.update(
                member_epoch=m.member_epoch,
                target_assignment=_local_partitions(m.target_assignment or (), slug),
                subscribed_topics=[split_name(t)[1] for t in m.subscribed_topics
                                   if split_name(t)[0] == slug],
                subscribed_regex=m.subscribed_regex)
        members.append(member)
    return members


def store_tenant(tenant: Tenant, cluster: ClusterSnapshot, now: datetime) -> list[ConsumerGroupLag]:
    """Evaluate and store one tenant's groups and topics; returns the groups' new rows."""
    previous = {row.group: row for row in ConsumerGroupLag.objects.filter(tenant=tenant)}
    rows, samples = [], []
    taken_at = connection.ops.adapt_datetimefield_value(now)  # as the ORM would store it
    for physical in sorted(set(cluster.committed) | set(cluster.groups)):
        slug, group = split_name(physical)
        if slug != tenant.slug:
            continue
        prior = previous.get(group)
        if physical not in cluster.committed and prior is not None:
            rows.append(prior)  # its offsets could not be read this time: keep what we know
            continue
        description = cluster.groups.get(physical)
        observed = observed_offsets(cluster.committed.get(physical, {}), cluster.bounds,
                                    _assigned(description), slug, cluster.stable)
        active = bool(description and description.active)
        state = evaluate_group(group_lag_from_json(prior.lag) if prior and prior.lag else None,
                               observed, active, now.timestamp())
        heads = {(p.topic, p.partition): cluster.heads[(f"{slug}.{p.topic}", p.partition, p.position)]
                 for p in state.partitions
                 if (f"{slug}.{p.topic}", p.partition, p.position) in cluster.heads}
        timing = group_time(state, heads, active, now.timestamp())
        rows.append(ConsumerGroupLag(
            tenant=tenant, group=group, state=description.state if description else "UNKNOWN",
            group_type=(description.group_type if description
                        else cluster.types.get(physical, kafka.CLASSIC)),
            assignor=description.assignor if description else "",
            group_epoch=description.group_epoch if description else None,
            assignment_epoch=description.assignment_epoch if description else None,
            members=_members(description, slug), lag=group_lag_to_json(state),
            status=state.status.name, total_lag=state.total_lag, max_lag=state.max_lag,
            time_lag_s=state.time_lag_s, lag_seconds=timing.lag_seconds, eta_s=timing.eta_s,
            partition_times=group_time_to_json(timing), updated_at=now))
        samples += [(tenant.pk, group, p.topic, p.partition, taken_at, p.position,
                     p.high_watermark, p.lag) for p in state.partitions]
    with transaction.atomic():
        ConsumerGroupLag.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["tenant", "group"],
            update_fields=["state", "group_type", "assignor", "group_epoch", "assignment_epoch",
                           "members", "lag", "status", "total_lag", "max_lag",
                           "time_lag_s", "lag_seconds", "eta_s", "partition_times",
                           "updated_at"])
        if cluster.groups_listed_completely:
            ConsumerGroupLag.objects.filter(tenant=tenant).exclude(
                group__in=[row.group for row in rows]).delete()
        _insert_samples(samples)
        _store_throughput(tenant, cluster.bounds, now)
    return rows


def _insert_samples(samples: list[tuple]) -> None:
    """Append history rows with one ``executemany``: at 500 groups × 20 partitions per snapshot,
    the ORM's per-object SQL compilation cost seconds, the insert itself milliseconds."""
    table = LagSample._meta.db_table
    columns = ["tenant_id", "group", "topic", "partition", "taken_at", "committed",
               "high_watermark", "lag"]
    with connection.cursor() as cursor:
        quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
        cursor.executemany(f"INSERT INTO {table} ({quoted}) VALUES ({', '.join(['%s'] * 8)})",
                           samples)


def _store_throughput(tenant: Tenant, bounds: Bounds, now: datetime) -> None:
    """Per topic: retained records = Σ(high watermark − log start); produce rate =
    Δ(Σ high watermark) / Δt since the previous snapshot."""
    records: dict[str, int] = defaultdict(int)
    end_offsets: dict[str, int] = defaultdict(int)
    for (physical, _), (log_start, high_watermark) in bounds.items():
        slug, topic = split_name(physical)
        if slug == tenant.slug:
            records[topic] += high_watermark - log_start
            end_offsets[topic] += high_watermark
    previous = {row.topic: row for row in TopicThroughput.objects.filter(tenant=tenant)}
    rows = []
    for topic, end_offset in end_offsets.items():
        prior = previous.get(topic)
        elapsed = (now - prior.updated_at).total_seconds() if prior else 0.0
        rate = max(0.0, (end_offset - prior.end_offset) / elapsed) if prior and elapsed > 0 else None
        rows.append(TopicThroughput(tenant=tenant, topic=topic, records=records[topic],
                                    end_offset=end_offset, rate=rate, updated_at=now))
    TopicThroughput.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["tenant", "topic"],
        update_fields=["records", "end_offset", "rate", "updated_at"])
    TopicThroughput.objects.filter(tenant=tenant).exclude(topic__in=end_offsets).delete()


def snapshot_all(admin: kafka.AdminClient | None = None) -> dict[str, float]:
    """One snapshot of every tenant; returns timings (seconds) for benchmarks and logs."""
    started = time.monotonic()
    tenants = list(Tenant.objects.all())
    cluster = read_cluster(admin or kafka.admin_client(), {t.slug for t in tenants})
    cluster = replace(cluster, heads=lag_heads.read_heads(waiting_records(cluster)))
    fetched = time.monotonic()
    now = datetime.now(UTC)
    for tenant in tenants:
        rows = store_tenant(tenant, cluster, now)
        evaluate_slos(tenant, rows, now)
        transaction.on_commit(functools.partial(live.broadcast, tenant.slug, rows))
    LagSample.objects.filter(taken_at__lt=now - timedelta(seconds=settings.LAG_HISTORY_SECONDS)
                             ).delete()
    stored = time.monotonic()
    return {"fetch_s": fetched - started, "store_s": stored - fetched, "total_s": stored - started}
