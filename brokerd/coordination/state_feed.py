"""What the broker is told about each topic: ZooKeeper reads and the controller's pushed
states, merged so that neither can take a partition back to an older state.

Why pushes: after a failover the controller writes thousands of partition-state znodes,
and every other broker learnt them only by re-reading each one as its watch fired (one
ZooKeeper read per partition, ~5 s for 10,000 on a loaded 2-core machine).  So the
controller also sends what it wrote, with each state's znode version, to the brokers
hosting the replicas (Kafka's LeaderAndIsr), and they apply it at once.  ZooKeeper stays
the source of truth: the watches still fire and their re-reads still run, correcting any
push that was lost (a dropped connection, a broker that restarted meanwhile).

Ordering rule: a partition's state is replaced only by one at a higher znode version (the
version of ``/brokers/topics/<t>/partitions/<p>/state``, which only grows while the topic
exists; Kafka 3.x calls it the partition epoch), so a duplicate, a push that arrives after
a newer read, or a read that was answered before a push, never moves a partition back.
A push from an older controller epoch than one already seen is refused as a whole
(STALE_CONTROLLER_EPOCH), as in Kafka; a push naming a topic by another id than the one
known (deleted and re-created) is ignored for that topic.

Thread-safety: none; the event loop's thread only (the ZooKeeper thread posts into it).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from brokerd.coordination.znodes import PartitionState, TopicMetadata

Deliver = Callable[[str, TopicMetadata | None], None]
# (controller epoch, [(fresh metadata, the states written in it)]): the controller's output.
Written = list[tuple[TopicMetadata, dict[int, PartitionState]]]
Push = Callable[[int, Written], None]


@dataclass(frozen=True)
class PushedTopic:
    """One topic of a push: the states the controller wrote, by partition."""

    name: str
    topic_id: uuid.UUID
    states: dict[int, PartitionState]


class StaleControllerError(Exception):
    """A push from a controller epoch older than one this broker has seen."""


class StateFeed:
    """The newest metadata handed to ``deliver`` for each topic."""

    def __init__(self, deliver: Deliver,
                 offer: Callable[[list[PushedTopic]], None] | None = None) -> None:
        """``offer``: hands an applied push on to the ZooKeeper thread's topic cache."""
        self._deliver = deliver
        self._offer = offer
        self._topics: dict[str, TopicMetadata] = {}
        self.controller_epoch = 0  # the highest seen in a push
        # Sends what this broker's controller wrote to the other brokers (None: nobody).
        self.push: Push | None = None

    def topic(self, name: str) -> TopicMetadata | None:
        return self._topics.get(name)

    def read(self, name: str, metadata: TopicMetadata | None) -> None:
        """A topic as ZooKeeper (or this broker's own controller) just gave it: delivered
        with any newer pushed state kept in place of the one read."""
        current = self._topics.get(name)
        if metadata is None:
            self._topics.pop(name, None)
        else:
            if current is not None and current.topic_id == metadata.topic_id:
                metadata = _with_newer(metadata, current.states.items())
            self._topics[name] = metadata
        self._deliver(name, metadata)

    def written(self, controller_epoch: int, written: Written) -> None:
        """This broker's controller wrote (or re-read) these: deliver them here and push
        the written states to the other brokers."""
        for metadata, _ in written:
            self.read(metadata.name, metadata)
        pushed = [(metadata, states) for metadata, states in written if states]
        if self.push is not None and pushed:
            self.push(controller_epoch, pushed)

    def pushed(self, controller_epoch: int, topics: list[PushedTopic]
               ) -> dict[str, dict[int, PartitionState] | None]:
        """Apply a controller's push; returns, by topic, the states that were newer than
        the ones known (applied and delivered), or None for a topic not known by that id.
        Raises :class:`StaleControllerError` (nothing applied) for an older epoch."""
        if controller_epoch < self.controller_epoch:
            raise StaleControllerError(
                f"controller epoch {controller_epoch} < {self.controller_epoch}")
        self.controller_epoch = controller_epoch
        if self._offer is not None:
            self._offer(topics)
        applied: dict[str, dict[int, PartitionState] | None] = {}
        for topic in topics:
            current = self._topics.get(topic.name)
            if current is None or current.topic_id != topic.topic_id:
                applied[topic.name] = None
                continue
            newer = newer_states(current, topic.topic_id, topic.states)
            applied[topic.name] = newer
            if newer:
                updated = dataclasses.replace(current, states={**current.states, **newer})
                self._topics[topic.name] = updated
                self._deliver(topic.name, updated)
        return applied


def newer_states(current: TopicMetadata, topic_id: uuid.UUID,
                 states: dict[int, PartitionState]) -> dict[int, PartitionState]:
    """The states of ``states`` newer than ``current``'s (none when the ids differ)."""
    if current.topic_id != topic_id:
        return {}
    return {p: state for p, state in states.items()
            if p in current.replicas and _newer(state, current.states.get(p))}


def _newer(state: PartitionState, known: PartitionState | None) -> bool:
    return known is None or state.zk_version > known.zk_version


def _with_newer(metadata: TopicMetadata,
                candidates: Iterable[tuple[int, PartitionState]]) -> TopicMetadata:
    """``metadata`` with each state replaced by a candidate at a higher version."""
    states = metadata.states
    newer = {p: state for p, state in candidates
             if p in states and state.zk_version > states[p].zk_version}
    if not newer:
        return metadata
    return dataclasses.replace(metadata, states={**states, **newer})
