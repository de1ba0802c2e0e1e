"""The control plane's Kafka-protocol edge: consumer groups and offsets via confluent-kafka.

The control plane never imports brokerd; it asks the brokers as any operator tool would, with
confluent-kafka's AdminClient on the operator listener (``settings.OPERATOR_BOOTSTRAP_SERVERS``,
PLAINTEXT), where names are physical: topics ``<slug>.<name>``, groups ``<slug>.<group>``.
Requests map to the protocol as: ``list_consumer_groups`` → ListGroups,
``describe_consumer_groups`` → FindCoordinator + DescribeGroups, ``list_consumer_group_offsets``
→ OffsetFetch, ``list_offsets`` → ListOffsets (earliest = log start, latest = high watermark,
a timestamp = first offset at or after it), ``alter_consumer_group_offsets`` → OffsetCommit.

Every call blocks for at most ``settings.KAFKA_ADMIN_TIMEOUT_S``; requests for many groups
or partitions are issued together and awaited together.  A request the brokers do not answer in
time raises :class:`KafkaRequestFailed` (never the futures' bare ``TimeoutError``), so every
caller can show "the brokers did not answer" instead of failing.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TypeVar

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

# One admin client and error type for the whole control plane (tenants' topic requests use it).
from tenants.kafka_admin import KafkaRequestFailed
from tenants.kafka_admin import admin_client as admin_client  # re-exported for the console
from tenants.kafka_admin import admin_timeout as _timeout

TopicPartitionKey = tuple[str, int]
T = TypeVar("T")
# states in which a group has (or is about to have) members; offsets must not be reset then
ACTIVE_STATES = {"STABLE", "PREPARING_REBALANCE", "COMPLETING_REBALANCE"}


@dataclass(frozen=True)
class Member:
    member_id: str
    client_id: str
    host: str
    assignment: tuple[TopicPartitionKey, ...] = ()


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str  # Kafka's group state, upper case: STABLE, EMPTY, DEAD, …
    members: tuple[Member, ...] = field(default=())

    @property
    def active(self) -> bool:
        return bool(self.members) or self.state in ACTIVE_STATES


def _answer(future: Future[T], what: str) -> T:
    """The future's result; no answer within the timeout is a failed request (a slow or
    stopped broker), not an exception only the futures module knows."""
    try:
        return future.result(_timeout())
    except TimeoutError as exc:
        raise KafkaRequestFailed(f"{what}: no answer within {_timeout():g} s") from exc


def list_group_ids(admin: AdminClient) -> list[str]:
    try:
        result = _answer(admin.list_consumer_groups(request_timeout=_timeout()), "list groups")
    except KafkaException as exc:
        raise KafkaRequestFailed(str(exc)) from exc
    return sorted(listing.group_id for listing in result.valid)


def _state_name(state: object) -> str:
    return str(getattr(state, "name", state) or "UNKNOWN").upper()


def describe_groups(admin: AdminClient, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
    """State and members of each group; a group that cannot be described is left out."""
    group_ids = list(group_ids)
    if not group_ids:
        return {}
    futures = admin.describe_consumer_groups(group_ids, request_timeout=_timeout())
    described = {}
    for group_id, future in futures.items():
        try:
            description = _answer(future, f"describe group {group_id}")
        except KafkaException:
            continue
        members = tuple(Member(
            member_id=m.member_id, client_id=m.client_id or "", host=m.host or "",
            assignment=tuple(sorted((tp.topic, tp.partition)
                                    for tp in (m.assignment.topic_partitions if m.assignment else []))))
            for m in description.members)
        described[group_id] = GroupDescription(group_id, _state_name(description.state), members)
    return described


def committed_offsets(admin: AdminClient, group_ids: Iterable[str]
                      ) -> dict[str, dict[TopicPartitionKey, int]]:
    """Each group's committed offsets; partitions without a commit are left out.

    confluent-kafka takes one group per OffsetFetch call, so all calls are issued first and
    their answers awaited after, which keeps them in flight together.
    """
    futures = {}
    for group_id in group_ids:
        futures.update(admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group_id)], request_timeout=_timeout()))
    committed: dict[str, dict[TopicPartitionKey, int]] = {}
    for group_id, future in futures.items():
        try:
            result = _answer(future, f"offsets of group {group_id}")
        except KafkaException:
            continue
        committed[group_id] = {(tp.topic, tp.partition): tp.offset
                               for tp in result.topic_partitions if tp.offset >= 0 and not tp.error}
    return committed


def list_offsets(admin: AdminClient, partitions: Iterable[TopicPartitionKey],
                 spec: OffsetSpec) -> dict[TopicPartitionKey, int]:
    """One ListOffsets answer per partition (failed partitions are left out)."""
    request = {TopicPartition(topic, partition): spec for topic, partition in partitions}
    if not request:
        return {}
    answers = {}
    for tp, future in admin.list_offsets(request, request_timeout=_timeout()).items():
        try:
            answers[(tp.topic, tp.partition)] = _answer(future, "list offsets").offset
        except KafkaException:
            continue
    return answers


def log_bounds(admin: AdminClient, partitions: Iterable[TopicPartitionKey]
               ) -> dict[TopicPartitionKey, tuple[int, int]]:
    """(log start, high watermark) of each partition that answered both."""
    partitions = list(partitions)
    starts = list_offsets(admin, partitions, OffsetSpec.earliest())
    ends = list_offsets(admin, partitions, OffsetSpec.latest())
    return {tp: (starts[tp], ends[tp]) for tp in partitions if tp in starts and tp in ends}


def offsets_for_timestamp(admin: AdminClient, partitions: Iterable[TopicPartitionKey],
                          timestamp_ms: int) -> dict[TopicPartitionKey, int]:
    """The first offset whose timestamp is at or after ``timestamp_ms`` (the high watermark when
    none is; Kafka answers -1 there, which we translate)."""
    partitions = list(partitions)
    found = list_offsets(admin, partitions, OffsetSpec.for_timestamp(timestamp_ms))
    missing = [tp for tp in partitions if found.get(tp, -1) < 0]
    found.update(list_offsets(admin, missing, OffsetSpec.latest()))
    return found


def partition_counts(admin: AdminClient) -> dict[str, int]:
    """Every topic's partition count, from a Metadata request."""
    try:
        metadata = admin.list_topics(timeout=_timeout())
    except KafkaException as exc:
        raise KafkaRequestFailed(str(exc)) from exc
    return {name: len(topic.partitions) for name, topic in metadata.topics.items()}


def alter_offsets(admin: AdminClient, group_id: str, offsets: dict[TopicPartitionKey, int]) -> None:
    """Commit ``offsets`` for an (inactive) group; the broker refuses while it has members."""
    request = ConsumerGroupTopicPartitions(
        group_id, [TopicPartition(topic, partition, offset)
                   for (topic, partition), offset in sorted(offsets.items())])
    future = admin.alter_consumer_group_offsets([request], request_timeout=_timeout())[group_id]
    try:
        result = _answer(future, f"commit offsets of {group_id}")
    except KafkaException as exc:
        raise KafkaRequestFailed(str(exc)) from exc
    errors = [f"{tp.topic}-{tp.partition}: {tp.error}" for tp in result.topic_partitions if tp.error]
    if errors:
        raise KafkaRequestFailed("; ".join(errors))
