"""Partition reassignment and preferred-leader election in Kafka's ZooKeeper formats (pure, no I/O).

The control plane asks; the controller inside brokerd moves.  What each side writes:

- ``/admin/reassign_partitions`` (control plane; the controller removes each partition when its
  move is complete and deletes the node when it is empty):
  ``{"version":1,"partitions":[{"topic":"acme.orders","partition":0,"replicas":[2,3,1]}]}``
- ``/brokers/topics/<t>`` (controller): during a move the partition's assignment is
  target + (original - target) and Kafka's ``adding_replicas`` / ``removing_replicas`` maps name
  the difference (``{"0":[3]}``); when done the assignment is exactly the target, maps empty.
- ``/brokers/topics/<t>/partitions/<p>/state`` (controller): ``{"leader":b,"leader_epoch":n,"isr":[…]}``.
- ``/config/brokers/<default>`` (control plane): ``follower.replication.throttled.rate`` in
  bytes/s while a throttled move is pending, announced by a ``config_change_`` notification.
- ``/admin/preferred_replica_election`` (control plane):
  ``{"version":1,"partitions":[{"topic":t,"partition":p}]}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .znodes import DEFAULT_ENTITY, decode, encode

REASSIGN_ZNODE = "/admin/reassign_partitions"
PREFERRED_ELECTION_ZNODE = "/admin/preferred_replica_election"
BROKER_DEFAULT_ENTITY = f"brokers/{DEFAULT_ENTITY}"
THROTTLE_KEY = "follower.replication.throttled.rate"
NO_LEADER = -1

TopicPartition = tuple[str, int]
Moves = dict[TopicPartition, list[int]]


class MoveConflict(Exception):
    """A partition is already being moved (Kafka refuses a second reassignment of it)."""


def reassign_payload(moves: Mapping[TopicPartition, Sequence[int]]) -> bytes:
    entries = [{"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in sorted(moves.items())]
    return encode({"version": 1, "partitions": entries})


def parse_reassign(data: bytes | None) -> Moves:
    """The pending moves of a ``/admin/reassign_partitions`` node (empty when absent)."""
    return {(e["topic"], int(e["partition"])): [int(b) for b in e["replicas"]]
            for e in decode(data).get("partitions", [])}


def merge_moves(pending: Mapping[TopicPartition, Sequence[int]],
                new: Mapping[TopicPartition, Sequence[int]]) -> Moves:
    """Add ``new`` to the pending request; the same target again is a harmless retry.

    Raises MoveConflict for a partition that is pending with a different target.
    """
    merged = {tp: list(r) for tp, r in pending.items()}
    for tp, replicas in new.items():
        if tp in merged and merged[tp] != list(replicas):
            raise MoveConflict(f"{tp[0]}-{tp[1]} is already being moved to {merged[tp]}")
        merged[tp] = list(replicas)
    return merged


def election_payload(partitions: Iterable[TopicPartition]) -> bytes:
    entries = [{"topic": t, "partition": p} for t, p in sorted(set(partitions))]
    return encode({"version": 1, "partitions": entries})


def parse_election(data: bytes | None) -> set[TopicPartition]:
    return {(e["topic"], int(e["partition"])) for e in decode(data).get("partitions", [])}


def throttled_config(current: Mapping[str, str], rate: int | None) -> dict[str, str]:
    """The broker-default config with the throttle set to ``rate`` (None: removed), others kept."""
    config = {k: v for k, v in current.items() if k != THROTTLE_KEY}
    if rate is not None:
        config[THROTTLE_KEY] = str(rate)
    return config


@dataclass
class PartitionState:
    """One partition as the controller last wrote it (None fields: not in ZooKeeper)."""

    replicas: list[int] | None
    adding: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)
    leader: int = NO_LEADER
    leader_epoch: int | None = None
    isr: list[int] = field(default_factory=list)
    requested: list[int] | None = None  # target while pending in /admin/reassign_partitions


def partition_state(topic_data: bytes | None, state_data: bytes | None, partition: int,
                    requested: list[int] | None) -> PartitionState:
    topic = decode(topic_data)
    key = str(partition)
    replicas = topic.get("partitions", {}).get(key)
    state = decode(state_data)
    return PartitionState(
        replicas=None if replicas is None else list(replicas),
        adding=list((topic.get("adding_replicas") or {}).get(key, [])),
        removing=list((topic.get("removing_replicas") or {}).get(key, [])),
        leader=state.get("leader", NO_LEADER), leader_epoch=state.get("leader_epoch"),
        isr=list(state.get("isr", [])), requested=requested)


@dataclass(frozen=True)
class Verdict:
    """What the tracker concludes about one move: finished, failed, or still running (with why)."""

    done: bool
    failed: bool
    progress: str


def judge(state: PartitionState, target: Sequence[int]) -> Verdict:
    """Kafka's completion rule: the request no longer names the partition and its assignment is
    exactly the target with nothing being added or removed.

    A partition that left the request with any other assignment was dropped by the controller
    (topic deleted, move cancelled): the move failed.
    """
    target = list(target)
    if state.replicas is None:
        return Verdict(False, True, "the topic or partition no longer exists")
    summary = (f"replicas {state.replicas}, ISR {state.isr}, "
               f"leader {state.leader if state.leader != NO_LEADER else 'none'}")
    if state.requested is None:
        if state.replicas == target and not state.adding and not state.removing:
            return Verdict(True, False, f"complete: {summary}")
        return Verdict(False, True, f"the controller dropped the request: {summary}")
    if state.adding:
        waiting = [b for b in state.adding if b not in state.isr]
        step = (f"adding {state.adding}; waiting for {waiting} to join the ISR" if waiting
                else f"adding {state.adding}; all in sync")
    elif state.removing:
        step = f"removing {state.removing}"
    elif state.replicas == target:
        step = "assignment reached; waiting for the controller to finish"
    else:
        step = "waiting for the controller to start"
    return Verdict(False, False, f"{step}: {summary}")
