"""The control plane's Kafka-protocol edge: consumer groups and offsets via confluent-kafka.

The control plane never imports brokerd; it asks the brokers as any operator tool would, with
confluent-kafka's AdminClient on the operator listener (``settings.OPERATOR_BOOTSTRAP_SERVERS``,
PLAINTEXT), where names are physical: topics ``<slug>.<name>``, groups ``<slug>.<group>``.
Requests map to the protocol as: ``list_consumer_groups`` → ListGroups (v5: each group's
type, classic or consumer), ``describe_consumer_groups`` → FindCoordinator + DescribeGroups or
ConsumerGroupDescribe, then for consumer-protocol (KIP-848) groups our own ConsumerGroupDescribe
to their coordinator for the epochs confluent-kafka does not expose
(``consumer_group_describe.py``), ``list_consumer_group_offsets`` → OffsetFetch (both kinds),
``list_offsets`` → ListOffsets (earliest = log start, latest = high watermark — or, read
committed, the last stable offset —, a timestamp = first offset at or after it),
``alter_consumer_group_offsets`` → OffsetCommit.

Every call blocks for at most ``settings.KAFKA_ADMIN_TIMEOUT_S``; requests for many groups
or partitions are issued together and awaited together.  A request the brokers do not answer in
time raises :class:`KafkaRequestFailed` (never the futures' bare ``TimeoutError``), so every
caller can show "the brokers did not answer" instead of failing.
"""

from __future__ import annotations

import itertools
import socket
import struct
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import TypeVar

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    IsolationLevel,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

# One admin client and error type for the whole control plane (tenants' topic requests use it).
from tenants.kafka_admin import KafkaRequestFailed
from tenants.kafka_admin import admin_client as admin_client  # re-exported for the console
from tenants.kafka_admin import admin_timeout as _timeout

from . import consumer_group_describe as cgd

TopicPartitionKey = tuple[str, int]
T = TypeVar("T")
# states in which a group has (or is about to have) members; offsets must not be reset then
# (classic: PREPARING/COMPLETING_REBALANCE; consumer protocol: ASSIGNING, RECONCILING)
ACTIVE_STATES = {"STABLE", "PREPARING_REBALANCE", "COMPLETING_REBALANCE", "ASSIGNING",
                 "RECONCILING"}
CLASSIC, CONSUMER = "classic", "consumer"  # ListGroups v5's group types
_correlation_ids = itertools.count(1)


@dataclass(frozen=True)
class Member:
    """A group member; the epoch, target assignment and subscription exist for consumer-protocol
    members only (None / empty for classic ones, whose subscription the leader interprets)."""

    member_id: str
    client_id: str
    host: str
    assignment: tuple[TopicPartitionKey, ...] = ()
    instance_id: str | None = None
    member_epoch: int | None = None
    target_assignment: tuple[TopicPartitionKey, ...] | None = None
    subscribed_topics: tuple[str, ...] = ()
    subscribed_regex: str | None = None


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str  # Kafka's group state, upper case: STABLE, EMPTY, RECONCILING, DEAD, …
    members: tuple[Member, ...] = field(default=())
    group_type: str = CLASSIC
    assignor: str = ""  # classic: the protocol the leader chose; consumer: the broker's assignor
    group_epoch: int | None = None  # consumer protocol only, as is the next one
    assignment_epoch: int | None = None

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


def _type_name(group_type: object) -> str:
    return CONSUMER if group_type == ConsumerGroupType.CONSUMER else CLASSIC


@dataclass(frozen=True)
class GroupListing:
    """Every group's id and type (``classic`` or ``consumer``) that the brokers listed.
    ``complete`` is False when a broker's ListGroups failed (down, slow, still loading its
    groups): a group missing from ``types`` may then still exist."""

    types: dict[str, str]
    complete: bool


def list_groups(admin: AdminClient) -> GroupListing:
    try:
        result = _answer(admin.list_consumer_groups(request_timeout=_timeout()), "list groups")
    except KafkaException as exc:
        raise KafkaRequestFailed(str(exc)) from exc
    return GroupListing({listing.group_id: _type_name(getattr(listing, "type", None))
                         for listing in sorted(result.valid, key=lambda g: g.group_id)},
                        complete=not result.errors)


def _state_name(state: object) -> str:
    return str(getattr(state, "name", state) or "UNKNOWN").upper()


def _partitions(assignment: object) -> tuple[TopicPartitionKey, ...]:
    return tuple(sorted((tp.topic, tp.partition)
                        for tp in getattr(assignment, "topic_partitions", None) or []))


def describe_groups(admin: AdminClient, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
    """Type, state, assignor and members of each group; consumer-protocol groups also their
    epochs (one ConsumerGroupDescribe per coordinator).  A group that cannot be described is
    left out; one whose epochs could not be read keeps what confluent-kafka told."""
    group_ids = list(group_ids)
    if not group_ids:
        return {}
    futures = admin.describe_consumer_groups(group_ids, request_timeout=_timeout())
    described = {}
    coordinators: dict[tuple[str, int], list[str]] = defaultdict(list)
    for group_id, future in futures.items():
        try:
            description = _answer(future, f"describe group {group_id}")
        except KafkaException:
            continue
        group_type = _type_name(getattr(description, "type", None))
        members = tuple(Member(
            member_id=m.member_id, client_id=m.client_id or "", host=m.host or "",
            assignment=_partitions(m.assignment), instance_id=m.group_instance_id,
            target_assignment=(_partitions(m.target_assignment) if group_type == CONSUMER
                               else None))
            for m in description.members)
        described[group_id] = GroupDescription(
            group_id, _state_name(description.state), members, group_type,
            description.partition_assignor or "")
        coordinator = description.coordinator
        if group_type == CONSUMER and coordinator is not None:
            coordinators[(coordinator.host, coordinator.port)].append(group_id)
    for (host, port), ids in coordinators.items():
        try:
            answers = consumer_group_describe(host, port, ids)
        except (OSError, ValueError):
            continue  # no epochs this time; the rest of the description stands
        for answer in answers:
            if answer.error_code == 0 and answer.group_id in described:
                described[answer.group_id] = with_epochs(described[answer.group_id], answer)
    return described


def with_epochs(description: GroupDescription, answer: cgd.DescribedGroup) -> GroupDescription:
    """The description with ConsumerGroupDescribe's state, epochs, assignor and members."""
    members = tuple(Member(
        member_id=m.member_id, client_id=m.client_id, host=m.client_host,
        assignment=m.assignment, instance_id=m.instance_id, member_epoch=m.member_epoch,
        target_assignment=m.target_assignment, subscribed_topics=m.subscribed_topic_names,
        subscribed_regex=m.subscribed_topic_regex)
        for m in sorted(answer.members, key=lambda m: m.member_id))
    return replace(description, state=answer.group_state.upper() or description.state,
                   members=members, assignor=answer.assignor_name or description.assignor,
                   group_epoch=answer.group_epoch, assignment_epoch=answer.assignment_epoch)


def consumer_group_describe(host: str, port: int, group_ids: list[str]
                            ) -> list[cgd.DescribedGroup]:
    """One ConsumerGroupDescribe v0 to a coordinator on the operator listener (PLAINTEXT)."""
    correlation_id = next(_correlation_ids) & 0x7FFFFFFF
    with socket.create_connection((host, port), timeout=_timeout()) as connection:
        connection.settimeout(_timeout())
        connection.sendall(cgd.encode_request(correlation_id, "kafkasaas-console", group_ids))
        (size,) = struct.unpack(">i", _receive(connection, 4))
        answered, groups = cgd.decode_response(_receive(connection, size))
    if answered != correlation_id:
        raise ValueError(f"correlation id {answered}, expected {correlation_id}")
    return groups


def exchange(host: str, port: int, request: bytes) -> bytes:
    """Send one size-prefixed request to a broker on the operator listener (PLAINTEXT) and return
    its response without the size prefix (for APIs confluent-kafka lacks: ``transactions.py``).
    A broker that does not answer in time raises :class:`KafkaRequestFailed`."""
    try:
        with socket.create_connection((host, port), timeout=_timeout()) as connection:
            connection.settimeout(_timeout())
            connection.sendall(request)
            (size,) = struct.unpack(">i", _receive(connection, 4))
            return _receive(connection, size)
    except OSError as exc:
        raise KafkaRequestFailed(f"broker {host}:{port}: {exc}") from exc


def broker_addresses(admin: AdminClient) -> dict[int, tuple[str, int]]:
    """Every live broker's operator-listener endpoint, from a Metadata request."""
    try:
        metadata = admin.list_topics(timeout=_timeout())
    except KafkaException as exc:
        raise KafkaRequestFailed(str(exc)) from exc
    return {broker_id: (str(broker.host), int(broker.port))
            for broker_id, broker in metadata.brokers.items()}


def _receive(connection: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = connection.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the coordinator closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


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
                 spec: OffsetSpec, isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED
                 ) -> dict[TopicPartitionKey, int]:
    """One ListOffsets answer per partition (failed partitions are left out)."""
    request = {TopicPartition(topic, partition): spec for topic, partition in partitions}
    if not request:
        return {}
    answers = {}
    for tp, future in admin.list_offsets(request, isolation_level=isolation_level,
                                         request_timeout=_timeout()).items():
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


def stable_offsets(admin: AdminClient, partitions: Iterable[TopicPartitionKey]
                   ) -> dict[TopicPartitionKey, int]:
    """Each partition's last stable offset (ListOffsets latest, isolation_level=1): where a
    read_committed consumer stops, below any open transaction."""
    return list_offsets(admin, partitions, OffsetSpec.latest(), IsolationLevel.READ_COMMITTED)


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
