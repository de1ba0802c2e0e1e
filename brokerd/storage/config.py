"""Per-topic log configuration, named and defaulted exactly like Kafka's topic configs.

Kafka stores a topic's overrides in ZooKeeper as strings (``/config/topics/<t>`` =
``{"version":1,"config":{"retention.ms":"3600000"}}``); :meth:`LogConfig.from_props`
parses such a dict and :meth:`LogConfig.with_overrides` layers it over broker defaults,
so operators' knowledge of Kafka's names and units carries over unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

# Kafka's "no limit" value for millisecond and count settings (Java's Long.MAX_VALUE).
LONG_MAX = 2**63 - 1

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"


@dataclass(frozen=True)
class LogConfig:
    """Immutable settings of one partition log; replace the whole object to change it.

    Field ``x_y`` corresponds to Kafka topic config ``x.y``; every default is Kafka's.
    Frozen, so one instance is safely shared by many logs and threads.
    """

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * 24 * 3600 * 1000  # -1 = keep forever
    retention_bytes: int = -1  # -1 = no size limit
    flush_messages: int = LONG_MAX  # LONG_MAX = leave fsync to the OS and to segment roll
    flush_ms: int = LONG_MAX
    max_message_bytes: int = 1024 * 1024 + 12  # one batch, including its 12-byte log overhead
    message_timestamp_type: str = CREATE_TIME
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX
    cleanup_policy: tuple[str, ...] = ("delete",)
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    delete_retention_ms: int = 24 * 3600 * 1000
    min_compaction_lag_ms: int = 0
    min_cleanable_dirty_ratio: float = 0.5
    file_delete_delay_ms: int = 60_000

    def __post_init__(self) -> None:
        if self.segment_bytes < 14:
            raise ValueError("segment.bytes must be at least 14")
        if self.segment_index_bytes < 12:
            raise ValueError("segment.index.bytes must hold at least one index entry")
        if self.index_interval_bytes < 0 or self.max_message_bytes < 0:
            raise ValueError("index.interval.bytes and max.message.bytes must be >= 0")
        if self.message_timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
            raise ValueError(f"unknown message.timestamp.type {self.message_timestamp_type!r}")
        if not self.cleanup_policy or not set(self.cleanup_policy) <= {"delete", "compact"}:
            raise ValueError(f"invalid cleanup.policy {','.join(self.cleanup_policy)!r}")
        if self.min_insync_replicas < 1:
            raise ValueError("min.insync.replicas must be >= 1")
        if not 0 <= self.min_cleanable_dirty_ratio <= 1:
            raise ValueError("min.cleanable.dirty.ratio must be within [0, 1]")

    @property
    def deletes_old_segments(self) -> bool:
        """True when retention by time/size applies (``delete`` or ``compact,delete``)."""
        return "delete" in self.cleanup_policy

    @property
    def compacts(self) -> bool:
        """True when the cleaner compacts the log (``compact`` or ``compact,delete``)."""
        return "compact" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == LOG_APPEND_TIME

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> LogConfig:
        """Kafka defaults overridden by ``props`` (Kafka config names, string values)."""
        return cls().with_overrides(props)

    def with_overrides(self, props: Mapping[str, str]) -> LogConfig:
        """A copy of this config with ``props`` applied; unknown names are ignored because
        topic configs that do not concern the log (e.g. ``compression.type``) share the map.

        The deprecated ``message.timestamp.difference.max.ms`` sets both the before and the
        after window unless those newer names are given too (Kafka's precedence).
        """
        changes: dict[str, object] = {}
        for name, raw in props.items():
            field = _FIELD_BY_NAME.get(name)
            if field is not None:
                changes[field.name] = _parse(name, field.type, raw)
        legacy = props.get("message.timestamp.difference.max.ms")
        if legacy is not None:
            window = _parse_int("message.timestamp.difference.max.ms", legacy)
            changes.setdefault("message_timestamp_before_max_ms", window)
            changes.setdefault("message_timestamp_after_max_ms", window)
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def to_props(self) -> dict[str, str]:
        """Every setting as Kafka-named strings (the inverse of :meth:`from_props`)."""
        props: dict[str, str] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, tuple):
                text = ",".join(value)
            else:
                text = str(value)
            props[field.name.replace("_", ".")] = text
        return props


_FIELD_BY_NAME = {f.name.replace("_", "."): f for f in dataclasses.fields(LogConfig)}


def _parse(name: str, type_name: object, raw: str) -> object:
    if type_name == "int":
        return _parse_int(name, raw)
    if type_name == "float":
        try:
            return float(raw.strip())
        except ValueError:
            raise ValueError(f"{name} must be a number, not {raw!r}") from None
    if type_name == "bool":
        text = raw.strip().lower()
        if text not in ("true", "false"):
            raise ValueError(f"{name} must be true or false, not {raw!r}")
        return text == "true"
    if type_name == "tuple[str, ...]":
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    return raw.strip()


def _parse_int(name: str, raw: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise ValueError(f"{name} must be an integer, not {raw!r}") from None
