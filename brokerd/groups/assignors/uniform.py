"""The uniform assignor (Kafka's default): balanced, and sticky so rebalances move little.

Three steps, each deterministic (members are compared by load, then id):

1. Keep: every member keeps the partitions it owns that still exist and that it still
   subscribes to (a partition claimed by two members goes to the first in order).
2. Place: each partition nobody kept goes to the least-loaded member subscribing to it.
3. Balance: while the heaviest member that can give a partition owns two more than the
   lightest member that could take it, that partition moves.

With identical subscriptions the result is balanced within one partition, and a member
joining or leaving moves only the partitions that must move: the joiner's share, or the
leaver's partitions.  With differing subscriptions it balances as far as subscriptions
allow by single moves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from brokerd.groups.assignors.spec import (
    Assignment,
    MemberSpec,
    TopicPartition,
    Topics,
    ordered_members,
    subscribed_topics,
)


def assign_uniform(members: Mapping[str, MemberSpec], topics: Topics) -> Assignment:
    order = ordered_members(members)
    rank = {member_id: index for index, member_id in enumerate(order)}
    owned: dict[str, set[TopicPartition]] = {member_id: set() for member_id in order}
    subscribers = {topic: [m for m in order if topic in members[m].subscribed]
                   for topic in subscribed_topics(members, topics)}

    def load(member_id: str) -> tuple[int, int]:
        return (len(owned[member_id]), rank[member_id])

    placed: set[TopicPartition] = set()
    for member_id in order:
        for topic, partition in sorted(members[member_id].current):
            if (topic in members[member_id].subscribed and topic in subscribers
                    and partition < topics[topic] and (topic, partition) not in placed):
                owned[member_id].add((topic, partition))
                placed.add((topic, partition))

    for topic, candidates in subscribers.items():
        for partition in range(topics[topic]):
            if (topic, partition) not in placed:
                owned[min(candidates, key=load)].add((topic, partition))

    _balance(owned, subscribers, load)
    return {member_id: frozenset(parts) for member_id, parts in owned.items()}


def _balance(owned: dict[str, set[TopicPartition]], subscribers: dict[str, list[str]],
             load: Callable[[str], tuple[int, int]]) -> None:
    """Move one partition at a time from the heaviest member that can give one to the
    lightest member that can take it, until no such move leaves them closer.

    Always moving from the heaviest means a member that gave is never below the lightest
    afterwards, so it never takes back: with identical subscriptions only the members
    under their share gain anything.
    """
    while True:
        for giver in sorted(owned, key=lambda m: (-len(owned[m]), load(m))):
            move = next(((tp, taker) for tp in sorted(owned[giver], reverse=True)
                         for taker in [min(subscribers[tp[0]], key=load)]
                         if len(owned[giver]) - len(owned[taker]) > 1), None)
            if move is not None:
                partition, taker = move
                owned[giver].discard(partition)
                owned[taker].add(partition)
                break
        else:
            return
