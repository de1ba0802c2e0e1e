"""One classic consumer group: its members, generation and protocol, and nothing that moves.

This module holds the data and the small invariant-keeping mutations (add, remove, replace a
static member, start a generation); the rules that decide *when* to call them live in
``rebalance`` and ``membership``.  Not thread-safe: the runtime serialises work per group.

Invariants:
- ``leader_id`` is a key of ``members`` or None (None only when there are no members).
- ``static_members`` maps each static member's ``group_instance_id`` to its member id, for
  exactly the members that have one.
- ``protocol_type`` is set by the first member and shared by all; every member supports at
  least one protocol that all other members support (``supports_protocols`` is checked
  before any add).
- A member is "parked in join" / "parked in sync" iff its ``join_waiter`` / ``sync_waiter``
  holds the token of a request the runtime has not answered yet.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from brokerd.groups.records import GroupValue, MemberValue

CONSUMER_PROTOCOL_TYPE = "consumer"
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class GroupState(StrEnum):
    """Kafka's classic group states; the values are what DescribeGroups/ListGroups show.

    DEAD is only ever reported (for groups that do not exist), never held by a group.
    """

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


Protocols = list[tuple[str, bytes]]


@dataclass
class Member:
    """One member.  ``protocols`` is in the member's order of preference."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    join_waiter: int | None = None
    sync_waiter: int | None = None
    #: When the member is expired unless it heartbeats; ignored while it is parked.
    session_deadline_ms: int = 0

    @property
    def is_parked(self) -> bool:
        """A member waiting on the coordinator cannot heartbeat and is never expired."""
        return self.join_waiter is not None or self.sync_waiter is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata_for(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        return next(name for name in self.protocol_names() if name in candidates)


@dataclass
class Group:
    """A classic group.  ``current_state_timestamp`` is when it entered its state (ms)."""

    group_id: str
    state: GroupState
    current_state_timestamp: int
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    #: Member ids handed out with MEMBER_ID_REQUIRED, each with its expiry deadline.
    pending_members: dict[str, int] = field(default_factory=dict)
    #: Members of the new generation that have not sent SyncGroup yet.
    pending_sync: set[str] = field(default_factory=set)
    #: Topics the members subscribe to (consumer protocol), None if unknown.
    subscribed_topics: set[str] | None = None
    #: Set when a member joins during the initial delayed rebalance, to re-arm the delay.
    new_member_added: bool = False
    #: Deadline of the current join phase (rebalance timeout or initial-delay step).
    join_deadline_ms: int | None = None
    #: (delay, remaining) of an initial delayed rebalance in progress, else None.
    initial_delay: tuple[int, int] | None = None
    #: Deadline for every member of a new generation to have sent SyncGroup.
    sync_deadline_ms: int | None = None

    # -- queries ---------------------------------------------------------------------------

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def awaiting_join_count(self) -> int:
        return sum(1 for m in self.members.values() if m.join_waiter is not None)

    def has_all_members_joined(self) -> bool:
        return self.awaiting_join_count() == len(self.members) and not self.pending_members

    def can_rebalance(self) -> bool:
        return self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE,
                              GroupState.EMPTY)

    def rebalance_timeout_ms(self) -> int:
        """The join phase waits for the slowest member: the largest rebalance timeout."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        counts = Counter(name for m in self.members.values() for name in m.protocol_names())
        return {name for name, count in counts.items() if count == len(self.members)}

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        """Whether a member with this protocol type and these protocols may join."""
        if not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(
            self.candidate_protocols().intersection(names))

    def select_protocol(self) -> str:
        """Kafka's vote: each member votes for its preferred candidate; most votes wins.

        Ties go to the candidate that comes first in the leader's preference order, so the
        choice is deterministic (Kafka leaves ties to hash-map iteration order).
        """
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        best = max(votes.values())
        leader = self.members[self.leader_id] if self.leader_id else next(
            iter(self.members.values()))
        return next(n for n in leader.protocol_names() if votes.get(n) == best)

    def static_member_id(self, group_instance_id: str | None) -> str | None:
        return None if group_instance_id is None else self.static_members.get(group_instance_id)

    def member_error(self, member_id: str, group_instance_id: str | None) -> str | None:
        """Validate a (member id, instance id) pair: None, "fenced" or "unknown".

        A static member is known by its instance id; a request carrying the instance id with
        an older member id comes from a fenced zombie (FENCED_INSTANCE_ID).
        """
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                return "unknown"
            return None if existing == member_id else "fenced"
        return None if member_id in self.members else "unknown"

    def leader_view(self) -> list[dict[str, Any]]:
        """The JoinGroup member list the leader assigns from (selected protocol's metadata)."""
        assert self.protocol_name is not None
        return [
            {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
             "metadata": m.metadata_for(self.protocol_name)}
            for m in self.members.values()
        ]

    def next_deadline(self) -> int | None:
        """The earliest instant at which a timer of this group fires, or None."""
        deadlines = [d for d in (self.join_deadline_ms, self.sync_deadline_ms) if d is not None]
        deadlines.extend(self.pending_members.values())
        deadlines.extend(m.session_deadline_ms for m in self.members.values() if not m.is_parked)
        return min(deadlines, default=None)

    # -- mutations -------------------------------------------------------------------------

    def transition(self, state: GroupState, now_ms: int) -> None:
        self.state = state
        self.current_state_timestamp = now_ms

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.pop(member_id, None)
        self.pending_sync.discard(member_id)
        return member

    def replace_static_member(self, old_member_id: str, new_member_id: str) -> Member:
        """Give a static member a new id, keeping its place, assignment and leadership.

        Returns the old member object (its waiters still set, for the caller to fence).
        """
        old = self.members.pop(old_member_id)
        new = Member(new_member_id, old.group_instance_id, old.client_id, old.client_host,
                     old.rebalance_timeout_ms, old.session_timeout_ms, old.protocol_type,
                     old.protocols, old.assignment, session_deadline_ms=old.session_deadline_ms)
        self.members[new_member_id] = new
        assert old.group_instance_id is not None
        self.static_members[old.group_instance_id] = new_member_id
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        if old_member_id in self.pending_sync:
            self.pending_sync.discard(old_member_id)
            self.pending_sync.add(new_member_id)
        return old

    def elect_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick a member that did; False if none did."""
        leader = self.members.get(self.leader_id) if self.leader_id else None
        if leader is not None and leader.join_waiter is not None:
            return True
        for member in self.members.values():
            if member.join_waiter is not None:
                self.leader_id = member.member_id
                return True
        return False

    def init_next_generation(self, now_ms: int) -> None:
        """Start generation N+1: CompletingRebalance with a protocol, or Empty without one."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition(GroupState.EMPTY, now_ms)
        self.subscribed_topics = self.compute_subscribed_topics()

    def compute_subscribed_topics(self) -> set[str] | None:
        """Union of the consumer-protocol subscriptions; None when they cannot be read."""
        if not self.members:
            return set()
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = subscription_topics(member.metadata_for(self.protocol_name))
            if parsed is None:
                return None
            topics.update(parsed)
        return topics

    # -- persistence -----------------------------------------------------------------------

    def to_value(self, assignment: dict[str, bytes]) -> GroupValue:
        """The GroupMetadataValue persisting this generation with ``assignment``."""
        protocol = self.protocol_name
        return GroupValue(
            protocol_type=self.protocol_type or "",
            generation=self.generation_id,
            protocol=protocol,
            leader=self.leader_id,
            current_state_timestamp=self.current_state_timestamp,
            members=tuple(
                MemberValue(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout=m.rebalance_timeout_ms,
                    session_timeout=m.session_timeout_ms,
                    subscription=m.metadata_for(protocol) if protocol else b"",
                    assignment=assignment.get(m.member_id, b""),
                )
                for m in self.members.values()
            ),
        )

    @classmethod
    def from_value(cls, group_id: str, value: GroupValue, now_ms: int) -> Group:
        """Rebuild a loaded group: Stable with its members, or Empty without any.

        Only the selected protocol's metadata is persisted, so each member comes back
        supporting exactly that protocol; members get a fresh session (``now_ms`` + timeout)
        because their heartbeats went to the previous coordinator.
        """
        state = GroupState.STABLE if value.members else GroupState.EMPTY
        timestamp = value.current_state_timestamp
        group = cls(group_id, state, timestamp if timestamp >= 0 else now_ms,
                    generation_id=value.generation, protocol_type=value.protocol_type or None,
                    protocol_name=value.protocol)
        for m in value.members:
            protocols = [(value.protocol, m.subscription)] if value.protocol else []
            rebalance = m.rebalance_timeout if m.rebalance_timeout >= 0 else m.session_timeout
            group.add(Member(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                             rebalance, m.session_timeout, value.protocol_type, protocols,
                             m.assignment, session_deadline_ms=now_ms + m.session_timeout))
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        group.subscribed_topics = group.compute_subscribed_topics()
        return group


def subscription_topics(metadata: bytes) -> list[str] | None:
    """Topics of a ConsumerProtocolSubscription, or None if the bytes are not one.

    Layout (never flexible): version INT16, topics ARRAY(STRING), then fields we do not need
    (user data, owned partitions, generation, rack).
    """
    try:
        pos = _INT16.size
        (count,) = _INT32.unpack_from(metadata, pos)
        pos += _INT32.size
        if count < 0 or count > len(metadata):
            return None
        topics = []
        for _ in range(count):
            (length,) = _INT16.unpack_from(metadata, pos)
            pos += _INT16.size
            if length < 0 or pos + length > len(metadata):
                return None
            topics.append(metadata[pos:pos + length].decode())
            pos += length
    except (struct.error, UnicodeDecodeError):
        return None
    return topics
