"""Partition moves and leader elections: the control plane's side, against ZooKeeper.

Formats and the completion rule are in ``reassignment`` (pure); this module does the I/O.  The
request nodes are shared with other writers (Kafka's tools, a second worker), so every write is a
conditional (versioned) read-modify-write, retried when the node changed underneath.
Failure handling: kazoo errors propagate; the Celery tasks calling these retry them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from . import reassignment as r
from .models import Reassignment, Topic
from .znodes import config_znode, decode, topic_znode
from .zookeeper import put_config, read


@dataclass(frozen=True)
class ClusterFacts:
    """What a new request is validated against: the cluster as ZooKeeper shows it now."""

    assignments: dict[str, dict[str, list[int]]]  # topic -> partition -> replicas (topics asked about)
    brokers: list[int]  # registered (live) broker ids
    moving: set[r.TopicPartition]  # partitions pending in /admin/reassign_partitions


def live_broker_ids(zk: KazooClient) -> list[int]:
    """Registered broker ids (``/brokers/ids`` children; read only)."""
    return sorted(int(child) for child in zk.get_children("/brokers/ids")) if zk.exists(
        "/brokers/ids") else []


def read_facts(zk: KazooClient, topics: Iterable[str]) -> ClusterFacts:
    assignments = {}
    for topic in set(topics):
        data = read(zk, topic_znode(topic))
        if data is not None:
            assignments[topic] = {p: list(b) for p, b in decode(data).get("partitions", {}).items()}
    return ClusterFacts(assignments, live_broker_ids(zk), set(read_requested(zk)))


def read_requested(zk: KazooClient) -> r.Moves:
    return r.parse_reassign(read(zk, r.REASSIGN_ZNODE))


def _update(zk: KazooClient, path: str, change: Callable[[bytes | None], bytes]) -> bool:
    """Conditionally rewrite ``path`` with ``change(current)``, retrying lost races.

    True when the node changed.  ``change`` may raise to refuse (nothing is written).
    """
    while True:
        try:
            data, stat = zk.get(path)
        except NoNodeError:
            try:
                zk.create(path, change(None), makepath=True)
                return True
            except NodeExistsError:
                continue
        new = change(data)
        if new == data:
            return False
        try:
            zk.set(path, new, version=stat.version)
            return True
        except (BadVersionError, NoNodeError):
            continue


def write_request(zk: KazooClient, moves: Mapping[r.TopicPartition, Sequence[int]]) -> bool:
    """Add moves to ``/admin/reassign_partitions`` (raises MoveConflict for a moving partition)."""
    return _update(zk, r.REASSIGN_ZNODE,
                   lambda data: r.reassign_payload(r.merge_moves(r.parse_reassign(data), moves)))


def request_election(zk: KazooClient, partitions: Iterable[r.TopicPartition]) -> bool:
    """Ask the controller to move leadership back to preferred replicas (merged into a pending ask)."""
    wanted = set(partitions)
    return _update(zk, r.PREFERRED_ELECTION_ZNODE,
                   lambda data: r.election_payload(r.parse_election(data) | wanted))


def apply_throttle(zk: KazooClient, rate: int | None) -> bool:
    """Set (or with None remove) the brokers' default follower replication throttle."""
    current = decode(read(zk, config_znode(r.BROKER_DEFAULT_ENTITY))).get("config", {})
    config = r.throttled_config(current, rate)
    if config == current:
        return False
    return put_config(zk, r.BROKER_DEFAULT_ENTITY, config or None)


def partition_state(zk: KazooClient, topic: str, partition: int,
                    requested: r.Moves | None = None) -> r.PartitionState:
    requested = read_requested(zk) if requested is None else requested
    return r.partition_state(
        read(zk, topic_znode(topic)),
        read(zk, f"{topic_znode(topic)}/partitions/{partition}/state"),
        partition, requested.get((topic, partition)))


def _active_throttle() -> int | None:
    """The throttle that applies while moves are pending: the strictest one asked for."""
    rates = Reassignment.objects.filter(state__in=Reassignment.ACTIVE, throttle__isnull=False
                                        ).values_list("throttle", flat=True)
    return min((rate for rate in rates if rate is not None), default=None)


def start(zk: KazooClient, reassignment_id: int) -> list[str]:
    """Write one saved reassignment's request and mark it running.

    The throttle goes first, as Kafka's reassignment tool does it, so the new replicas never
    start catching up unthrottled; after a refusal the tracker lifts it again.
    """
    move = Reassignment.objects.filter(pk=reassignment_id, state=Reassignment.PENDING).first()
    if move is None:
        return []
    changes = []
    rate = _active_throttle()
    if apply_throttle(zk, rate):
        changes.append(f"throttle {rate} B/s" if rate else "throttle removed")
    try:
        if write_request(zk, {(move.topic, move.partition): move.replicas}):
            changes.append(f"requested {move}")
    except r.MoveConflict as exc:
        Reassignment.objects.filter(pk=move.pk).update(
            state=Reassignment.FAILED, progress=str(exc), finished_at=timezone.now())
        return [*changes, f"refused {move}: {exc}"]
    Reassignment.objects.filter(pk=move.pk, state=Reassignment.PENDING).update(
        state=Reassignment.RUNNING, started_at=timezone.now(), progress="requested")
    return changes


def _finish(move: Reassignment, verdict: r.Verdict) -> None:
    """Record the verdict; a completed move of a tenant topic also becomes its saved assignment
    (and its replication factor, once every partition has the same number of replicas)."""
    state = Reassignment.COMPLETE if verdict.done else Reassignment.FAILED
    with transaction.atomic():
        Reassignment.objects.filter(pk=move.pk).update(
            state=state, progress=verdict.progress, finished_at=timezone.now())
        if verdict.done:
            slug, _, name = move.topic.partition(".")
            topic = Topic.objects.select_for_update().filter(tenant__slug=slug, name=name).first()
            if topic is not None and topic.assignment is not None:
                topic.assignment = {**topic.assignment, str(move.partition): move.replicas}
                factors = {len(replicas) for replicas in topic.assignment.values()}
                if len(factors) == 1:
                    topic.replication_factor = factors.pop()
                topic.save(update_fields=["assignment", "replication_factor"])


def track(zk: KazooClient) -> list[str]:
    """Judge every running move against ZooKeeper; drop the throttle once none is pending."""
    changes = []
    # Rows first: a row is marked running only after its request is written, so the request
    # read next names every move listed (unless the controller has finished it).
    running = list(Reassignment.objects.filter(state=Reassignment.RUNNING).order_by("id"))
    requested = read_requested(zk)
    for move in running:
        verdict = r.judge(partition_state(zk, move.topic, move.partition, requested), move.replicas)
        if verdict.done or verdict.failed:
            _finish(move, verdict)
            changes.append(f"{'completed' if verdict.done else 'failed'} {move}: {verdict.progress}")
        elif verdict.progress != move.progress:
            Reassignment.objects.filter(pk=move.pk).update(progress=verdict.progress)
    rate = _active_throttle()
    if apply_throttle(zk, rate):
        changes.append(f"throttle {rate} B/s" if rate else "throttle removed")
    return changes
