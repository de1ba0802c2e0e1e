"""Broker configuration: Kafka-style properties, command-line overrides, typed access.

Why its own module: the broker's identity (id, listeners, ZooKeeper, log dirs) comes from
flags or a small ``server.properties``-style file, and everything else in Kafka's broker
key space has a documented default.  This module parses both sources into one immutable
:class:`BrokerConfig`; flags win over the file, the file wins over the defaults.

The properties format is Java's, restricted to what operators actually write:
``key=value`` or ``key: value`` per line, ``#``/``!`` comments, blank lines ignored,
surrounding whitespace stripped.  Line continuations and unicode escapes are not
supported (an unterminated continuation is a :class:`ConfigError`, not a silent guess).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from brokerd.replication.inter_broker_auth import inter_broker_auth
from brokerd.replication.replica_selector import canonical_selector
from brokerd.replication.rules import LATEST_INTER_BROKER_PROTOCOL, truncates_on_fetch
from brokerd.security.reauth import invalid_prefixed_values
from brokerd.security.ssl_principal import client_auth_settings
from brokerd.storage.file_cache import default_max_open_files


class ConfigError(ValueError):
    """The configuration cannot start a broker; the message names the offending key."""


# Broker keys that set a topic's default ``LogConfig``: broker key -> (topic key, unit factor).
# Kafka names a topic's setting differently from the broker-wide default it inherits
# (``log.retention.hours`` -> ``retention.ms``); the factor converts the unit.
_LOG_DEFAULT_KEYS: dict[str, tuple[str, int]] = {
    "log.segment.bytes": ("segment.bytes", 1),
    "log.roll.ms": ("segment.ms", 1),
    "log.roll.hours": ("segment.ms", 3_600_000),
    "log.index.size.max.bytes": ("segment.index.bytes", 1),
    "log.index.interval.bytes": ("index.interval.bytes", 1),
    "log.retention.ms": ("retention.ms", 1),
    "log.retention.minutes": ("retention.ms", 60_000),
    "log.retention.hours": ("retention.ms", 3_600_000),
    "log.retention.bytes": ("retention.bytes", 1),
    "log.flush.interval.messages": ("flush.messages", 1),
    "log.flush.interval.ms": ("flush.ms", 1),
    "message.max.bytes": ("max.message.bytes", 1),
    "log.message.timestamp.type": ("message.timestamp.type", 1),
    "log.cleanup.policy": ("cleanup.policy", 1),
    "min.insync.replicas": ("min.insync.replicas", 1),
    "unclean.leader.election.enable": ("unclean.leader.election.enable", 1),
    "log.cleaner.delete.retention.ms": ("delete.retention.ms", 1),
    "log.cleaner.min.compaction.lag.ms": ("min.compaction.lag.ms", 1),
    "log.cleaner.min.cleanable.ratio": ("min.cleanable.dirty.ratio", 1),
}
# When several broker keys map to one topic key, Kafka lets the finest unit win.
_UNIT_PRECEDENCE = ("log.retention.ms", "log.retention.minutes", "log.retention.hours",
                    "log.roll.ms", "log.roll.hours")

FETCH_TRANSFER_MODES = ("sendfile", "pread")


@dataclass(frozen=True)
class Endpoint:
    """One listener: ``PLAINTEXT://127.0.0.1:9092`` -> name PLAINTEXT, host, port.

    The listener name doubles as its security protocol until a
    ``listener.security.protocol.map`` says otherwise.
    """

    name: str
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


@dataclass(frozen=True)
class BrokerConfig:
    """Everything the broker process needs at start-up, typed and validated."""

    broker_id: int
    listeners: tuple[Endpoint, ...]
    zookeeper_connect: str
    log_dirs: tuple[Path, ...]
    advertised_listeners: tuple[Endpoint, ...] = ()
    rack: str | None = None
    # KIP-392: replica.selector.class (brokerd.replication.replica_selector); None: consumers
    # always read the leader (Kafka's default).
    replica_selector_class: str | None = None
    metrics_port: int | None = None
    # ``metrics.bind.address``: where the Prometheus endpoint listens; by default the host of
    # the first listener, so a broker whose listeners are all on 127.0.0.1 exposes nothing
    # else either (0.0.0.0: every interface, as for a listener without a host).
    metrics_bind_address: str = "0.0.0.0"
    auto_create_topics_enable: bool = True
    delete_topic_enable: bool = True
    num_partitions: int = 1
    default_replication_factor: int = 1
    socket_request_max_bytes: int = 104_857_600
    zookeeper_session_timeout_ms: int = 18_000
    # How Fetch responses move log bytes to the socket: ``sendfile`` (zero copy) or
    # ``pread`` (read chunks, hand them to the transport).  Measured by
    # tests/integration/brokerd/bench_fetch_transfer.py on loopback: sendfile 1.1-1.5 GiB/s,
    # pread 0.9-1.2 GiB/s, so sendfile is the default.
    fetch_transfer: str = "sendfile"
    # Group coordinator (Kafka's keys; brokerd.groups.GroupConfig explains each).  The offsets
    # topic's replication factor defaults to 1, not Kafka's 3: followers do not replicate yet,
    # so more replicas would add no durability and a one-broker cluster could never create it.
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 1
    group_initial_rebalance_delay_ms: int = 3_000
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_heartbeat_interval_ms: int = 250
    offsets_retention_minutes: int = 7 * 24 * 60
    # Transaction coordinator (Kafka's keys; brokerd.transactions.TxnConfig explains each).
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_replication_factor: int = 3
    transaction_state_log_min_isr: int = 2
    transaction_max_timeout_ms: int = 900_000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    transactional_id_expiration_ms: int = 604_800_000
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3_600_000
    # The ``transaction.version`` feature level ApiVersions finalizes (0-2; Kafka sets it
    # with kafka-features): 2 tells clients they may use transaction version 2 (KIP-890).
    transaction_version: int = 2
    # Topic-level defaults (Kafka's topic key names), inherited by every new log.
    log_defaults: Mapping[str, str] = field(default_factory=dict)
    # Every property as given (file, then flags): the static layer under the dynamic broker
    # configs of /config/brokers (brokerd.server.broker_configs), and what DescribeConfigs shows.
    static_props: Mapping[str, str] = field(default_factory=dict)
    # Security (docs/brokerd.md, "Listeners and security").  Kafka principals (``User:<name>``)
    # that bypass ACLs; ``User:ANONYMOUS`` is whoever uses a PLAINTEXT or SSL listener, so
    # leaving it here makes those listeners operator-only by construction.
    super_users: tuple[str, ...] = ("User:ANONYMOUS",)
    # A PEM file holding the broker's private key and certificate chain (SSL, SASL_SSL).
    ssl_keystore_location: Path | None = None
    max_connections_per_ip: int = 2_147_483_647
    connections_max_idle_ms: int = 600_000
    # KIP-368: SASL sessions last this long (answered as session_lifetime_ms); a client must
    # re-authenticate before then or its next request closes the connection.  0: forever.
    connections_max_reauth_ms: int = 0
    # Compaction: Kafka's log.cleaner.enable and log.cleaner.backoff.ms (idle sleep).
    log_cleaner_enable: bool = True
    log_cleaner_backoff_ms: int = 15_000
    # Kafka's log.retention.check.interval.ms (Kafka: 5 min; 30 s here because a check of an
    # idle log is a handful of comparisons).
    log_retention_check_interval_ms: int = 30_000
    # Segment files (.log descriptors and index mappings) open at once in this process
    # (brokerd.storage.file_cache); the rest are reopened on use. Default: half the soft
    # descriptor limit (``ulimit -n``), leaving the other half for connections.
    log_max_open_files: int = field(default_factory=default_max_open_files)
    # Usage metering (docs/brokerd.md, "Metering"): how often usage is appended to __usage
    # (the window stays one minute) and the partition count __usage is created with.
    metering_flush_interval_ms: int = 60_000
    metering_topic_num_partitions: int = 12
    # Replication (docs/brokerd.md, "Replication"), Kafka's keys and defaults.  Followers
    # fetch from leaders over the listener named ``inter.broker.listener.name``.
    inter_broker_listener_name: str = "PLAINTEXT"
    # Kafka's inter.broker.protocol.version; what it switches here is whether followers
    # truncate on fetch (2.7-IV1 and later) or ask OffsetForLeaderEpoch first (older: set
    # it to the old version during a rolling upgrade, see docs/brokerd.md "Replication").
    inter_broker_protocol_version: str = LATEST_INTER_BROKER_PROTOCOL
    replica_lag_time_max_ms: int = 30_000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_max_bytes: int = 1_048_576
    replica_fetch_response_max_bytes: int = 10_485_760
    replica_socket_timeout_ms: int = 30_000
    # Fetch sessions (KIP-227, docs/brokerd.md "Replication"), Kafka's keys and defaults:
    # at most this many sessions are cached (0: none, every fetch is full), and a session
    # unused for this long may be evicted by any new one.
    max_incremental_fetch_session_cache_slots: int = 1000
    min_incremental_fetch_session_eviction_ms: int = 120_000
    # Controller: moving leadership back to preferred replicas, and SIGTERM's hand-over.
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    controlled_shutdown_enable: bool = True
    controlled_shutdown_timeout_ms: int = 30_000

    @property
    def advertised(self) -> tuple[Endpoint, ...]:
        """Endpoints clients are told to connect to (advertised, else the listeners)."""
        return self.advertised_listeners or self.listeners


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java-properties text into a dict; later keys override earlier ones."""
    result: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\"):
            raise ConfigError(f"line {number}: line continuations are not supported")
        separators = [i for i in (line.find("="), line.find(":")) if i > 0]
        if not separators:
            raise ConfigError(f"line {number}: expected key=value, got {raw!r}")
        cut = min(separators)
        result[line[:cut].strip()] = line[cut + 1 :].strip()
    return result


def parse_listeners(value: str, key: str = "listeners") -> tuple[Endpoint, ...]:
    """``NAME://host:port[,NAME://host:port…]`` -> endpoints (names must be unique)."""
    endpoints: list[Endpoint] = []
    for item in filter(None, (part.strip() for part in value.split(","))):
        # Not urllib: listener names such as SASL_SSL are not valid URL schemes.
        name, separator, address = item.partition("://")
        host, _, port = address.rpartition(":")
        if not name or not separator or not port.isdigit():
            raise ConfigError(f"{key}: {item!r} is not NAME://host:port")
        endpoints.append(Endpoint(name.upper(), host.strip("[]") or "0.0.0.0", int(port)))
    names = [endpoint.name for endpoint in endpoints]
    if not endpoints or len(set(names)) != len(names):
        raise ConfigError(f"{key}: need at least one listener and unique names, got {value!r}")
    return tuple(endpoints)


def _as_int(props: Mapping[str, str], key: str, default: int) -> int:
    value = props.get(key)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{key}: {value!r} is not an integer") from None


def _as_bool(props: Mapping[str, str], key: str, default: bool) -> bool:
    value = props.get(key)
    if value is None:
        return default
    if value.lower() not in ("true", "false"):
        raise ConfigError(f"{key}: {value!r} is not true/false")
    return value.lower() == "true"


def log_defaults_from(props: Mapping[str, str]) -> dict[str, str]:
    """Translate broker-wide ``log.*`` keys into topic-level config keys and units."""
    defaults: dict[str, str] = {}
    ordered = [k for k in _LOG_DEFAULT_KEYS if k not in _UNIT_PRECEDENCE]
    ordered += list(reversed(_UNIT_PRECEDENCE))  # coarse first, so fine units overwrite
    for broker_key in ordered:
        if broker_key not in props:
            continue
        topic_key, factor = _LOG_DEFAULT_KEYS[broker_key]
        value = props[broker_key]
        if factor != 1:
            value = str(_as_int(props, broker_key, 0) * factor)
        defaults[topic_key] = value
    return defaults


def _replica_selector(name: str | None) -> str | None:
    try:
        return canonical_selector(name)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def build_config(props: Mapping[str, str]) -> BrokerConfig:
    """Build a validated :class:`BrokerConfig` from merged properties (file + flags)."""
    for required in ("broker.id", "listeners", "zookeeper.connect", "log.dirs"):
        if not props.get(required):
            raise ConfigError(f"{required} is required")
    listeners = parse_listeners(props["listeners"])
    advertised = props.get("advertised.listeners")
    fetch_transfer = props.get("socket.fetch.transfer", "sendfile")
    if fetch_transfer not in FETCH_TRANSFER_MODES:
        raise ConfigError(f"socket.fetch.transfer: {fetch_transfer!r} not in "
                          f"{FETCH_TRANSFER_MODES}")
    metrics_port = props.get("metrics.port")
    config = BrokerConfig(
        broker_id=_as_int(props, "broker.id", -1),
        listeners=listeners,
        zookeeper_connect=props["zookeeper.connect"],
        log_dirs=tuple(Path(p.strip()) for p in props["log.dirs"].split(",") if p.strip()),
        advertised_listeners=parse_listeners(advertised, "advertised.listeners")
        if advertised else (),
        rack=props.get("broker.rack") or None,
        replica_selector_class=_replica_selector(props.get("replica.selector.class")),
        metrics_port=_as_int(props, "metrics.port", 0) if metrics_port else None,
        metrics_bind_address=props.get("metrics.bind.address", listeners[0].host),
        auto_create_topics_enable=_as_bool(props, "auto.create.topics.enable", True),
        delete_topic_enable=_as_bool(props, "delete.topic.enable", True),
        num_partitions=_as_int(props, "num.partitions", 1),
        default_replication_factor=_as_int(props, "default.replication.factor", 1),
        socket_request_max_bytes=_as_int(props, "socket.request.max.bytes", 104_857_600),
        zookeeper_session_timeout_ms=_as_int(props, "zookeeper.session.timeout.ms", 18_000),
        fetch_transfer=fetch_transfer,
        log_cleaner_enable=_as_bool(props, "log.cleaner.enable", True),
        log_cleaner_backoff_ms=_as_int(props, "log.cleaner.backoff.ms", 15_000),
        offsets_topic_num_partitions=_as_int(props, "offsets.topic.num.partitions", 50),
        offsets_topic_replication_factor=_as_int(props, "offsets.topic.replication.factor", 1),
        group_initial_rebalance_delay_ms=_as_int(props, "group.initial.rebalance.delay.ms",
                                                 3_000),
        group_min_session_timeout_ms=_as_int(props, "group.min.session.timeout.ms", 6_000),
        group_max_session_timeout_ms=_as_int(props, "group.max.session.timeout.ms", 1_800_000),
        group_consumer_session_timeout_ms=_as_int(props, "group.consumer.session.timeout.ms",
                                                  45_000),
        group_consumer_heartbeat_interval_ms=_as_int(
            props, "group.consumer.heartbeat.interval.ms", 250),
        offsets_retention_minutes=_as_int(props, "offsets.retention.minutes", 7 * 24 * 60),
        transaction_state_log_num_partitions=_as_int(
            props, "transaction.state.log.num.partitions", 50),
        transaction_state_log_replication_factor=_as_int(
            props, "transaction.state.log.replication.factor", 3),
        transaction_state_log_min_isr=_as_int(props, "transaction.state.log.min.isr", 2),
        transaction_max_timeout_ms=_as_int(props, "transaction.max.timeout.ms", 900_000),
        transaction_abort_timed_out_transaction_cleanup_interval_ms=_as_int(
            props, "transaction.abort.timed.out.transaction.cleanup.interval.ms", 10_000),
        transactional_id_expiration_ms=_as_int(props, "transactional.id.expiration.ms",
                                               604_800_000),
        transaction_remove_expired_transaction_cleanup_interval_ms=_as_int(
            props, "transaction.remove.expired.transaction.cleanup.interval.ms", 3_600_000),
        transaction_version=_as_int(props, "transaction.version", 2),
        log_defaults=log_defaults_from(props),
        static_props=dict(props),
        super_users=tuple(filter(None, (user.strip() for user in
                                        props.get("super.users", "User:ANONYMOUS").split(";")))),
        ssl_keystore_location=Path(props["ssl.keystore.location"])
        if props.get("ssl.keystore.location") else None,
        max_connections_per_ip=_as_int(props, "max.connections.per.ip", 2_147_483_647),
        connections_max_idle_ms=_as_int(props, "connections.max.idle.ms", 600_000),
        connections_max_reauth_ms=_as_int(props, "connections.max.reauth.ms", 0),
        log_retention_check_interval_ms=_as_int(props, "log.retention.check.interval.ms",
                                                30_000),
        log_max_open_files=_as_int(props, "log.max.open.files", default_max_open_files()),
        metering_flush_interval_ms=_as_int(props, "metering.flush.interval.ms", 60_000),
        metering_topic_num_partitions=_as_int(props, "metering.topic.num.partitions", 12),
        inter_broker_listener_name=props.get("inter.broker.listener.name", "PLAINTEXT"),
        inter_broker_protocol_version=props.get("inter.broker.protocol.version",
                                                LATEST_INTER_BROKER_PROTOCOL),
        replica_lag_time_max_ms=_as_int(props, "replica.lag.time.max.ms", 30_000),
        replica_fetch_wait_max_ms=_as_int(props, "replica.fetch.wait.max.ms", 500),
        replica_fetch_max_bytes=_as_int(props, "replica.fetch.max.bytes", 1_048_576),
        replica_fetch_response_max_bytes=_as_int(props, "replica.fetch.response.max.bytes",
                                                 10_485_760),
        replica_socket_timeout_ms=_as_int(props, "replica.socket.timeout.ms", 30_000),
        max_incremental_fetch_session_cache_slots=_as_int(
            props, "max.incremental.fetch.session.cache.slots", 1000),
        min_incremental_fetch_session_eviction_ms=_as_int(
            props, "min.incremental.fetch.session.eviction.ms", 120_000),
        auto_leader_rebalance_enable=_as_bool(props, "auto.leader.rebalance.enable", True),
        leader_imbalance_check_interval_seconds=_as_int(
            props, "leader.imbalance.check.interval.seconds", 300),
        controlled_shutdown_enable=_as_bool(props, "controlled.shutdown.enable", True),
        controlled_shutdown_timeout_ms=_as_int(props, "controlled.shutdown.timeout.ms", 30_000),
    )
    if config.broker_id < 0:
        raise ConfigError("broker.id must be a non-negative integer")
    if config.num_partitions < 1 or config.default_replication_factor < 1:
        raise ConfigError("num.partitions and default.replication.factor must be >= 1")
    if config.offsets_topic_num_partitions < 1 or config.offsets_topic_replication_factor < 1:
        raise ConfigError("offsets.topic.num.partitions and .replication.factor must be >= 1")
    if min(config.transaction_state_log_num_partitions,
           config.transaction_state_log_replication_factor,
           config.transaction_state_log_min_isr, config.transaction_max_timeout_ms,
           config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
           config.transactional_id_expiration_ms,
           config.transaction_remove_expired_transaction_cleanup_interval_ms) < 1:
        raise ConfigError("transaction.state.log.*, transaction.*.ms and "
                          "transactional.id.expiration.ms must be >= 1")
    if config.transaction_version not in (0, 1, 2):
        raise ConfigError("transaction.version must be 0, 1 or 2")
    if not 0 <= config.group_min_session_timeout_ms <= config.group_max_session_timeout_ms:
        raise ConfigError("group.min.session.timeout.ms must be between 0 and "
                          "group.max.session.timeout.ms")
    tls = [e.url for e in listeners if e.name in ("SSL", "SASL_SSL")]
    if tls and config.ssl_keystore_location is None:
        raise ConfigError(f"ssl.keystore.location is required by {', '.join(tls)}")
    if config.log_retention_check_interval_ms < 1:
        raise ConfigError("log.retention.check.interval.ms must be >= 1")
    if config.log_max_open_files < 1:
        raise ConfigError("log.max.open.files must be >= 1")
    if config.connections_max_reauth_ms < 0 or invalid_prefixed_values(props):
        raise ConfigError("connections.max.reauth.ms (also listener.name.<listener>.<mechanism>."
                          f"connections.max.reauth.ms) must be >= 0: "
                          f"{invalid_prefixed_values(props) or config.connections_max_reauth_ms}")
    if config.max_connections_per_ip < 1 or config.connections_max_idle_ms < 1:
        raise ConfigError("max.connections.per.ip and connections.max.idle.ms must be >= 1")
    if config.metering_flush_interval_ms < 1 or config.metering_topic_num_partitions < 1:
        raise ConfigError("metering.flush.interval.ms and .topic.num.partitions must be >= 1")
    if min(config.replica_lag_time_max_ms, config.replica_fetch_wait_max_ms,
           config.replica_fetch_max_bytes, config.replica_socket_timeout_ms,
           config.leader_imbalance_check_interval_seconds) < 1:
        raise ConfigError("replica.* and leader.imbalance.check.interval.seconds must be >= 1")
    if min(config.max_incremental_fetch_session_cache_slots,
           config.min_incremental_fetch_session_eviction_ms) < 0:
        raise ConfigError("max.incremental.fetch.session.cache.slots and "
                          "min.incremental.fetch.session.eviction.ms must be >= 0")
    if config.inter_broker_listener_name not in {e.name for e in listeners}:
        raise ConfigError(f"inter.broker.listener.name {config.inter_broker_listener_name!r} "
                          "names none of the listeners")
    try:  # TLS trust and SASL credentials of the inter-broker listener
        truncates_on_fetch(config.inter_broker_protocol_version)
        inter_broker_auth(props, config.inter_broker_listener_name)
        client_auth_settings(props)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if config.socket_request_max_bytes < 1024:
        raise ConfigError("socket.request.max.bytes must be at least 1024")
    return config


def load_config(config_file: Path | None, overrides: Mapping[str, str | None]) -> BrokerConfig:
    """Read the optional properties file, apply non-None flag overrides, validate."""
    props: dict[str, str] = {}
    if config_file is not None:
        try:
            props.update(parse_properties(config_file.read_text(encoding="utf-8")))
        except OSError as exc:
            raise ConfigError(f"cannot read {config_file}: {exc}") from exc
    props.update({key: value for key, value in overrides.items() if value is not None})
    return build_config(props)
