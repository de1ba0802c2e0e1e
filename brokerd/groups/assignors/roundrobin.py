"""The round-robin assignor: every subscribed partition dealt to the members in turn.

Partitions are taken in (topic, partition) order and dealt around the members (ordered by
instance id, else member id); a member that does not subscribe to a partition's topic is
skipped for it.  With identical subscriptions member loads differ by at most one.
"""

from __future__ import annotations

from collections.abc import Mapping

from brokerd.groups.assignors.spec import (
    Assignment,
    MemberSpec,
    TopicPartition,
    Topics,
    ordered_members,
    subscribed_topics,
)


def assign_roundrobin(members: Mapping[str, MemberSpec], topics: Topics) -> Assignment:
    result: dict[str, set[TopicPartition]] = {member_id: set() for member_id in members}
    order = ordered_members(members)
    turn = 0
    for topic in subscribed_topics(members, topics):
        for partition in range(topics[topic]):
            while topic not in members[order[turn % len(order)]].subscribed:
                turn += 1
            result[order[turn % len(order)]].add((topic, partition))
            turn += 1
    return {member_id: frozenset(parts) for member_id, parts in result.items()}
