"""What an assignor sees and returns.

Topics are named (the coordinator maps names to topic ids at its edge); partitions are
``(topic, index)`` pairs.  An assignor must give every partition of a topic that at least
one member subscribes to to exactly one subscribing member, and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

TopicPartition = tuple[str, int]
#: topic name -> number of partitions.
Topics = Mapping[str, int]
#: member id -> the partitions it should own.
Assignment = dict[str, frozenset[TopicPartition]]


@dataclass(frozen=True)
class MemberSpec:
    """One member as an assignor sees it: what it subscribes to and what it has now.

    ``instance_id`` (``group.instance.id``) orders static members by a name that survives
    restarts, as the classic assignors do.
    """

    subscribed: frozenset[str]
    current: frozenset[TopicPartition] = field(default_factory=frozenset)
    instance_id: str | None = None


Assignor = Callable[[Mapping[str, MemberSpec], Topics], Assignment]


def sort_key(member_id: str, spec: MemberSpec) -> tuple[str, str]:
    """Members in a stable order: by instance id where there is one, then member id."""
    return (spec.instance_id or member_id, member_id)


def ordered_members(members: Mapping[str, MemberSpec]) -> list[str]:
    return sorted(members, key=lambda member_id: sort_key(member_id, members[member_id]))


def subscribed_topics(members: Mapping[str, MemberSpec], topics: Topics) -> list[str]:
    """Topics that exist and that at least one member subscribes to, sorted."""
    wanted: set[str] = set()
    for spec in members.values():
        wanted.update(spec.subscribed)
    return sorted(topic for topic in wanted if topics.get(topic, 0) > 0)
