"""One consumer-protocol group (KIP-848): epochs, members, target and current assignments.

Three epochs move the group forward:

- the *group epoch* grows whenever what the assignment depends on changes (a member joins,
  leaves or changes its subscription; a subscribed topic gains partitions);
- the *assignment epoch* is the group epoch the target assignment was computed for;
- each member's *member epoch* reaches the assignment epoch once the member has been
  reconciled to its target (see :mod:`.reconcile`).

Persistent fields change only in :meth:`ConsumerGroup.replay` (records appended by an
operation, or read back when a coordinator loads the partition); the rest (deadlines,
resolved regular expressions) is this coordinator's own bookkeeping.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any

from brokerd.groups.consumer.records import (
    CURRENT_ASSIGNMENT_KEY,
    MEMBER_KEY,
    METADATA_KEY,
    TARGET_MEMBER_KEY,
    TARGET_METADATA_KEY,
    ConsumerKey,
    TopicIdPartition,
    decode_value,
    from_wire,
)

Partitions = frozenset[TopicIdPartition]
NO_PARTITIONS: Partitions = frozenset()

#: Member epochs with a meaning of their own (ConsumerGroupHeartbeat's ``member_epoch``).
JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH = 0, -1, -2


class MemberState(IntEnum):
    """Kafka's ``MemberState`` (persisted as an int8)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class ConsumerGroupState(StrEnum):
    """What ListGroups/ConsumerGroupDescribe show for a consumer group."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


@dataclass(frozen=True)
class Subscription:
    """What a member asked for: topic names and/or a regular expression, and an assignor."""

    topic_names: tuple[str, ...] = ()
    regex: str | None = None
    server_assignor: str | None = None


@dataclass(frozen=True)
class Reconciliation:
    """A member's current assignment: where it stands on its way to its target."""

    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Partitions = NO_PARTITIONS
    pending_revocation: Partitions = NO_PARTITIONS


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscription: Subscription = field(default_factory=Subscription)
    current: Reconciliation = field(default_factory=Reconciliation)
    # -- not persisted --
    session_deadline_ms: int = 0
    #: Set while the member must revoke partitions: it is fenced if it has not by then.
    revocation_deadline_ms: int | None = None
    #: Topic names its regular expression matched when last resolved, and when (None: not
    #: yet; see ``coordinator.REGEX_REFRESH_MS``).
    regex_topics: frozenset[str] | None = None
    regex_resolved_ms: int | None = None

    def metadata_value(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "rack_id": self.rack_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "subscribed_topic_names": list(self.subscription.topic_names),
            "subscribed_topic_regex": self.subscription.regex,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "server_assignor": self.subscription.server_assignor,
            "classic_member_metadata": None,
        }

    def subscribed_names(self) -> frozenset[str]:
        """Topic names it subscribes to: the listed ones and its regex's matches."""
        return frozenset(self.subscription.topic_names) | (self.regex_topics or frozenset())


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Partitions] = field(default_factory=dict)

    # -- queries ---------------------------------------------------------------------------

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(m.current.member_epoch != self.assignment_epoch
               or m.current.state != MemberState.STABLE for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        if instance_id is None:
            return None
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def owner(self, partition: TopicIdPartition, other_than: str) -> str | None:
        """A member other than ``other_than`` that still holds ``partition`` (assigned or not
        yet revoked): the partition is not free for anyone else until it releases it."""
        for member in self.members.values():
            if member.member_id != other_than and (
                    partition in member.current.assigned
                    or partition in member.current.pending_revocation):
                return member.member_id
        return None

    def preferred_assignor(self) -> str | None:
        """The assignor most members asked for (ties: the first name), or None."""
        votes: dict[str, int] = {}
        for member in self.members.values():
            if member.subscription.server_assignor:
                name = member.subscription.server_assignor
                votes[name] = votes.get(name, 0) + 1
        if not votes:
            return None
        best = max(votes.values())
        return min(name for name, count in votes.items() if count == best)

    def subscribed_names(self) -> frozenset[str]:
        names: frozenset[str] = frozenset()
        for member in self.members.values():
            names |= member.subscribed_names()
        return names

    def next_deadline(self) -> int | None:
        deadlines = [m.session_deadline_ms for m in self.members.values()]
        deadlines.extend(m.revocation_deadline_ms for m in self.members.values()
                         if m.revocation_deadline_ms is not None)
        return min(deadlines, default=None)

    # -- replay ----------------------------------------------------------------------------

    def replay(self, key: ConsumerKey, value: bytes | None, now_ms: int,
               session_timeout_ms: int) -> None:
        """Apply one persisted record (None: a tombstone)."""
        fields = None if value is None else decode_value(key.kind, value)
        if key.kind == METADATA_KEY:
            if fields is not None:
                self.group_epoch = fields["epoch"]
                self.metadata_hash = fields["metadata_hash"]
        elif key.kind == TARGET_METADATA_KEY:
            if fields is not None:
                self.assignment_epoch = fields["assignment_epoch"]
        elif key.member_id is not None:
            self._replay_member(key.kind, key.member_id, fields, now_ms, session_timeout_ms)

    def _replay_member(self, kind: int, member_id: str, fields: dict[str, Any] | None,
                       now_ms: int, session_timeout_ms: int) -> None:
        if kind == TARGET_MEMBER_KEY:
            if fields is None:
                self.target.pop(member_id, None)
            else:
                self.target[member_id] = from_wire(fields["topic_partitions"])
            return
        if fields is None:
            if kind == MEMBER_KEY:
                self.members.pop(member_id, None)
            elif member_id in self.members:
                self.members[member_id].current = Reconciliation()
            return
        member = self.members.get(member_id)
        if member is None:
            member = self.members[member_id] = ConsumerMember(
                member_id, session_deadline_ms=now_ms + session_timeout_ms)
        if kind == MEMBER_KEY:
            member.instance_id = fields["instance_id"]
            member.rack_id = fields["rack_id"]
            member.client_id = fields["client_id"]
            member.client_host = fields["client_host"]
            member.rebalance_timeout_ms = fields["rebalance_timeout_ms"]
            member.subscription = Subscription(tuple(fields["subscribed_topic_names"]),
                                               fields["subscribed_topic_regex"],
                                               fields["server_assignor"])
        elif kind == CURRENT_ASSIGNMENT_KEY:
            state = MemberState(fields["state"]) if fields["state"] in iter(MemberState) \
                else MemberState.UNKNOWN
            current = Reconciliation(fields["member_epoch"], fields["previous_member_epoch"],
                                     state, from_wire(fields["assigned_partitions"]),
                                     from_wire(fields["partitions_pending_revocation"]))
            if state == MemberState.UNREVOKED_PARTITIONS:
                if member.revocation_deadline_ms is None:
                    member.revocation_deadline_ms = now_ms + max(member.rebalance_timeout_ms, 0)
            else:
                member.revocation_deadline_ms = None
            member.current = current
