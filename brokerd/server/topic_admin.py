"""Topic creation and partition growth, shared by CreateTopics, CreatePartitions and
Metadata's auto-creation.

Validation is pure (:func:`validate_topic_name`, :func:`plan_new_topic`) so it is unit
tested without ZooKeeper; :func:`create_topic` then writes ZooKeeper and waits until the
controller has given every partition a leader and the change reached this broker's cache
— so a client that creates a topic and immediately asks for metadata sees it (Kafka
waits the same way, bounded by the request's timeout).
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from brokerd.coordination.assignment import AssignmentError, assign_replicas
from brokerd.coordination.writes import TopicExistsError, TopicNotFoundError
from brokerd.coordination.zk import OPERATION_TIMEOUT_S
from brokerd.coordination.zk_await import CoordinationUnavailableError
from brokerd.protocol import ErrorCode

if TYPE_CHECKING:
    from brokerd.server.context import HandlerContext

# Kafka's rule: 1-249 characters from [a-zA-Z0-9._-], and not "." or "..".
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


# Kafka topic configs outside LogConfig that clients commonly set; accepted and stored.
OTHER_TOPIC_CONFIGS = frozenset({
    "compression.type", "message.downconversion.enable", "preallocate",
    "min.cleanable.dirty.ratio", "max.compaction.lag.ms", "segment.jitter.ms",
    "message.timestamp.difference.max.ms", "message.format.version",
    "follower.replication.throttled.replicas", "leader.replication.throttled.replicas",
    "local.retention.ms", "local.retention.bytes", "remote.storage.enable",
})


@dataclass(frozen=True)
class AdminResult:
    """Outcome of one topic operation, in the protocol's terms."""

    error_code: int = ErrorCode.NONE
    error_message: str | None = None

    @property
    def ok(self) -> bool:
        return self.error_code == ErrorCode.NONE


def validate_topic_name(name: str) -> AdminResult:
    if name in (".", "..") or not _LEGAL_NAME.fullmatch(name or ""):
        return AdminResult(ErrorCode.INVALID_TOPIC_EXCEPTION,
                           f"illegal topic name {name!r}: use 1-249 of [a-zA-Z0-9._-]")
    return AdminResult()


def plan_new_topic(
    brokers: list[int],
    num_partitions: int,
    replication_factor: int,
    assignments: dict[int, list[int]],
    racks: dict[int, str | None] | None = None,
) -> tuple[AdminResult, dict[int, tuple[int, ...]]]:
    """Decide the replica assignment of a new topic (explicit or round-robin)."""
    if assignments:
        if sorted(assignments) != list(range(len(assignments))):
            return AdminResult(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               "partitions must be numbered 0..n-1"), {}
        for replicas in assignments.values():
            if not replicas or len(set(replicas)) != len(replicas):
                return AdminResult(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                   "each partition needs distinct replicas"), {}
            if not set(replicas) <= set(brokers):
                return AdminResult(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                   f"unknown broker in {replicas}"), {}
        return AdminResult(), {p: tuple(r) for p, r in assignments.items()}
    if num_partitions < 1:
        return AdminResult(ErrorCode.INVALID_PARTITIONS,
                           "number of partitions must be at least 1"), {}
    try:
        return AdminResult(), assign_replicas(brokers, range(num_partitions),
                                              replication_factor, racks=racks)
    except AssignmentError as exc:
        return AdminResult(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc)), {}


def broker_racks(broker: HandlerContext) -> dict[int, str | None]:
    """Each live broker's rack for placement (this broker's from its own config, in case
    its registration has not come back from ZooKeeper yet)."""
    racks = {b: registration.rack for b, registration in broker.cache.brokers.items()}
    racks[broker.config.broker_id] = broker.config.rack
    return racks


def known_topic_configs(broker: HandlerContext) -> set[str]:
    """Topic config names a client may set: the log's own plus Kafka's others, which are
    stored and described but not (yet) acted on."""
    return set(broker.default_log_config.to_props()) | OTHER_TOPIC_CONFIGS


def validate_configs(broker: HandlerContext, configs: dict[str, str]) -> AdminResult:
    unknown = sorted(set(configs) - known_topic_configs(broker))
    if unknown:
        return AdminResult(ErrorCode.INVALID_CONFIG, f"unknown topic configs {unknown}")
    try:
        broker.log_config_for(configs)
    except ValueError as exc:
        return AdminResult(ErrorCode.INVALID_CONFIG, str(exc))
    return AdminResult()


async def create_topic(
    broker: HandlerContext,
    name: str,
    num_partitions: int,
    replication_factor: int,
    assignments: dict[int, list[int]] | None = None,
    configs: dict[str, str] | None = None,
    validate_only: bool = False,
    timeout_s: float = 30.0,
) -> tuple[AdminResult, dict[int, tuple[int, ...]]]:
    """Create ``name`` (``-1`` counts mean the broker defaults); returns the assignment."""
    configs = configs or {}
    for check in (validate_topic_name(name), validate_configs(broker, configs)):
        if not check.ok:
            return check, {}
    if broker.cache.topic(name) is not None:
        return AdminResult(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} exists"), {}
    if num_partitions == -1:
        num_partitions = broker.config.num_partitions
    if replication_factor == -1:
        replication_factor = broker.config.default_replication_factor
    result, replicas = plan_new_topic(sorted(broker.cache.live_broker_ids()), num_partitions,
                                      replication_factor, assignments or {}, broker_racks(broker))
    if not result.ok or validate_only:
        return result, replicas
    assert broker.coordinator is not None
    deadline = time.monotonic() + timeout_s
    try:
        # The write may wait its turn behind other ZooKeeper work (the other topics of
        # a big CreateTopics request): it gets the request's timeout, at least the
        # coordinator's usual one (a zero timeout still writes).
        await broker.coordinator.create_topic(name, replicas, configs, uuid.uuid4(),
                                              timeout=max(timeout_s, OPERATION_TIMEOUT_S))
    except TopicExistsError:
        return AdminResult(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} exists"), {}
    except CoordinationUnavailableError as exc:
        return AdminResult(ErrorCode.REQUEST_TIMED_OUT, str(exc)), {}
    if timeout_s <= 0:
        return AdminResult(), replicas  # Kafka: a zero timeout means "do not wait"
    remaining = max(deadline - time.monotonic(), 0.0)
    if not await broker.cache.wait_until(lambda: broker.cache.has_leaders(name), remaining):
        return AdminResult(ErrorCode.REQUEST_TIMED_OUT,
                           "created, but leaders were not elected in time"), replicas
    return AdminResult(), replicas


async def add_partitions(
    broker: HandlerContext, name: str, count: int, assignments: list[list[int]] | None,
    validate_only: bool, timeout_s: float,
) -> AdminResult:
    """Grow ``name`` to ``count`` partitions (CreatePartitions)."""
    metadata = broker.cache.topic(name)
    if metadata is None:
        return AdminResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
    current = len(metadata.replicas)
    if count <= current:
        return AdminResult(ErrorCode.INVALID_PARTITIONS,
                           f"topic has {current} partitions; {count} would not add any")
    new_partitions = list(range(current, count))
    brokers = sorted(broker.cache.live_broker_ids())
    replication_factor = len(next(iter(metadata.replicas.values())))
    if assignments:
        if len(assignments) != len(new_partitions):
            return AdminResult(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"expected {len(new_partitions)} assignments")
        result, planned = plan_new_topic(
            brokers, 0, replication_factor, dict(enumerate(assignments)))
        replicas = {new_partitions[i]: r for i, r in planned.items()}
    else:
        try:
            replicas = assign_replicas(brokers, new_partitions, replication_factor, current,
                                       racks=broker_racks(broker))
            result = AdminResult()
        except AssignmentError as exc:
            result = AdminResult(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc))
    if not result.ok or validate_only:
        return result
    assert broker.coordinator is not None
    try:
        await broker.coordinator.set_partitions(name, replicas)
    except TopicNotFoundError:
        return AdminResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
    except CoordinationUnavailableError as exc:
        return AdminResult(ErrorCode.REQUEST_TIMED_OUT, str(exc))

    def grown() -> bool:
        topic = broker.cache.topic(name)
        return topic is not None and len(topic.replicas) >= count and broker.cache.has_leaders(
            name)

    if timeout_s > 0 and not await broker.cache.wait_until(grown, timeout_s):
        return AdminResult(ErrorCode.REQUEST_TIMED_OUT, "leaders were not elected in time")
    return AdminResult()
