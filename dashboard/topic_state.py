"""A topic as the brokers see it now: partitions (leader, ISR, offsets, size) and configs.

Asked on the operator listener with the control plane's admin client (Metadata, ListOffsets,
DescribeConfigs) and the brokers' metrics (sizes on disk, :mod:`dashboard.topic_sizes`); names
are physical (``<slug>.<name>``), shown without the prefix.  Each part that cannot be read
(a broker down or slow) leaves an error message and the rest of the page intact.

Configs: every topic config Kafka lets a client change with IncrementalAlterConfigs is
editable; the console writes the tenant's own overrides through ``tenants.services.update_topic``
(desired state, applied by ``topic_sync``), after the brokers validated the change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

from tenants.kafka_admin import KafkaRequestFailed, admin_timeout, validate_topic_configs
from tenants.zookeeper import client

from . import kafka
from .topic_sizes import TopicSizes, scrape_topic_sizes

# Set by the control plane itself (tenants.topic_sync): shown, not edited by tenants.
MANAGED_CONFIGS = {"min.insync.replicas"}
SOURCE_NAMES = {ConfigSource.DYNAMIC_TOPIC_CONFIG.value: "topic",
                ConfigSource.STATIC_BROKER_CONFIG.value: "broker",
                ConfigSource.DYNAMIC_BROKER_CONFIG.value: "broker",
                ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value: "broker",
                ConfigSource.DEFAULT_CONFIG.value: "default"}


@dataclass(frozen=True)
class PartitionState:
    partition: int
    leader: int | None
    replicas: list[int]
    isr: list[int]
    log_start: int | None
    high_watermark: int | None
    size_bytes: int | None

    @property
    def records(self) -> int | None:
        """Records retained (offsets between log start and end; compaction may remove some)."""
        if self.log_start is None or self.high_watermark is None:
            return None
        return self.high_watermark - self.log_start

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)


@dataclass(frozen=True)
class ConfigState:
    name: str
    value: str | None
    source: str  # topic, broker, default
    editable: bool


@dataclass
class TopicState:
    partitions: list[PartitionState] = field(default_factory=list)
    configs: list[ConfigState] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _failure(exc: Exception) -> str:
    if isinstance(exc, KafkaException) and exc.args:
        error = exc.args[0]
        return getattr(error, "str", lambda: str(error))()
    return str(exc)


def _partitions(admin: AdminClient, physical: str, sizes: TopicSizes) -> list[PartitionState]:
    future = admin.describe_topics(TopicCollection([physical]),
                                   request_timeout=admin_timeout())[physical]
    described = future.result(admin_timeout())
    keys = [(physical, p.id) for p in described.partitions]
    bounds = kafka.log_bounds(admin, keys)
    states = []
    for p in sorted(described.partitions, key=lambda p: p.id):
        start, end = bounds.get((physical, p.id), (None, None))
        states.append(PartitionState(
            p.id, p.leader.id if p.leader is not None and p.leader.id >= 0 else None,
            [n.id for n in p.replicas], [n.id for n in p.isr], start, end,
            sizes.partitions.get((physical, p.id))))
    return states


def _configs(admin: AdminClient, physical: str) -> list[ConfigState]:
    resource = ConfigResource(ResourceType.TOPIC, physical)
    entries = admin.describe_configs([resource], request_timeout=admin_timeout())[resource].result(
        admin_timeout())
    return [ConfigState(name, entry.value, SOURCE_NAMES.get(entry.source, "default"),
                        editable=not entry.is_read_only and name not in MANAGED_CONFIGS)
            for name, entry in sorted(entries.items())]


def read_topic_state(physical: str, admin: AdminClient | None = None) -> TopicState:
    admin = admin or kafka.admin_client()
    state = TopicState()
    try:
        sizes = scrape_topic_sizes(client())
        if sizes.unreachable:
            state.errors.append(f"sizes unavailable from broker(s) {sizes.unreachable}")
    except Exception as exc:  # ZooKeeper unreachable: offsets and configs still come
        sizes = TopicSizes()
        state.errors.append(f"sizes unavailable: {exc}")
    try:
        state.partitions = _partitions(admin, physical, sizes)
    except (KafkaException, KafkaRequestFailed, TimeoutError) as exc:
        state.errors.append(f"partitions unavailable: {_failure(exc)}")
    try:
        state.configs = _configs(admin, physical)
    except (KafkaException, KafkaRequestFailed, TimeoutError) as exc:
        state.errors.append(f"configs unavailable: {_failure(exc)}")
    return state


def check_config_change(physical: str, set_: dict[str, str], delete: list[str],
                        admin: AdminClient | None = None) -> None:
    """Ask the brokers to validate the change (IncrementalAlterConfigs, validate_only);
    raises :class:`KafkaRequestFailed` with Kafka's verdict."""
    validate_topic_configs(admin or kafka.admin_client(), physical, set_, delete)
