"""Current quota usage as the brokers measure it, read from their Prometheus endpoints.

Quotas are per broker (Kafka's design), so usage is reported per broker: each broker's
``/brokers/ids/<id>`` registration names its ``metrics_port``, and its ``/metrics`` text has
``kafka_quota_rate`` / ``kafka_quota_limit`` / ``kafka_quota_throttle_time_ms_total`` /
``kafka_quota_throttled_total`` labelled ``quota_type`` (produce|fetch|request), ``tenant``,
``user`` and ``client_id`` (empty when the quota is shared by all client ids of a user, or by
all users of a client id).  Parsing is pure; fetching is :mod:`broker_metrics`'.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kazoo.client import KazooClient
from prometheus_client.parser import text_string_to_metric_families

from .broker_metrics import fetch_metrics

QUOTA_TYPES = {"produce": "producer_byte_rate", "fetch": "consumer_byte_rate",
               "request": "request_percentage"}


@dataclass
class EntityUsage:
    """One quota entity on one broker."""

    broker_id: int
    quota_type: str
    tenant: str
    user: str
    client_id: str
    rate: float = 0.0
    limit: float | None = None
    source: str = ""
    throttle_time_ms_total: float = 0.0
    throttled_total: float = 0.0

    def matches(self, user: str, client_id: str | None) -> bool:
        """Does this entity's quota govern (user, client_id)? Empty labels match any value."""
        return self.user in ("", user) and self.client_id in ("", client_id or "")


@dataclass
class ClusterUsage:
    entities: list[EntityUsage] = field(default_factory=list)
    unreachable: list[int] = field(default_factory=list)

    def peak(self, quota_type: str, user: str, client_id: str | None) -> EntityUsage | None:
        """The broker where this (user, client id) uses the most of its quota type."""
        candidates = [e for e in self.entities
                      if e.quota_type == quota_type and e.matches(user, client_id)]
        return max(candidates, key=lambda e: e.rate, default=None)

    def throttled(self) -> list[EntityUsage]:
        return sorted((e for e in self.entities if e.throttled_total > 0),
                      key=lambda e: (-e.throttle_time_ms_total, e.broker_id))


def parse_metrics(broker_id: int, text: str) -> list[EntityUsage]:
    """The quota entities in one broker's Prometheus text."""
    entities: dict[tuple[str, ...], EntityUsage] = {}
    fields = {"kafka_quota_rate": "rate", "kafka_quota_limit": "limit",
              "kafka_quota_throttle_time_ms_total": "throttle_time_ms_total",
              "kafka_quota_throttled_total": "throttled_total"}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            attribute = fields.get(sample.name)
            if attribute is None:
                continue
            labels = sample.labels
            key = (labels.get("quota_type", ""), labels.get("tenant", ""), labels.get("user", ""),
                   labels.get("client_id", ""))
            entity = entities.setdefault(key, EntityUsage(broker_id, *key))
            setattr(entity, attribute, float(sample.value))
            if attribute == "limit":
                entity.source = labels.get("source", "")
    return list(entities.values())


def scrape(zk: KazooClient, tenants: Iterable[str] | None = None) -> ClusterUsage:
    """Read every live broker's quota metrics (optionally only some tenants' entities)."""
    texts, unreachable = fetch_metrics(zk)
    wanted = set(tenants) if tenants is not None else None
    usage = ClusterUsage(unreachable=unreachable)
    for broker_id, text in sorted(texts.items()):
        usage.entities += [e for e in parse_metrics(broker_id, text)
                           if wanted is None or e.tenant in wanted]
    return usage
