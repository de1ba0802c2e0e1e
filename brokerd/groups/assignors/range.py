"""The range assignor: per topic, each subscriber takes a consecutive run of partitions.

For each topic, its subscribers in order (instance id, else member id) get
``partitions // subscribers`` partitions each, the first ``partitions % subscribers`` one
more.  Partition *i* of co-partitioned topics therefore lands on the same member, which is
why joins against keyed topics use it; the price is imbalance across many topics (the first
members get the extra partition of every topic).
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


def assign_range(members: Mapping[str, MemberSpec], topics: Topics) -> Assignment:
    result: dict[str, set[TopicPartition]] = {member_id: set() for member_id in members}
    order = ordered_members(members)
    for topic in subscribed_topics(members, topics):
        subscribers = [m for m in order if topic in members[m].subscribed]
        count = topics[topic]
        quota, extra = divmod(count, len(subscribers))
        start = 0
        for position, member_id in enumerate(subscribers):
            length = quota + (1 if position < extra else 0)
            result[member_id].update((topic, p) for p in range(start, start + length))
            start += length
    return {member_id: frozenset(parts) for member_id, parts in result.items()}
