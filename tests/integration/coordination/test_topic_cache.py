"""TopicCache against real ZooKeeper: every state change is seen, even one that lands
while the topic's assignment is being re-read (a reassignment finishing, then a
preferred-leader election, on the controller's own broker)."""

from __future__ import annotations

import dataclasses
import time
import uuid

from kazoo.client import KazooClient

from brokerd.coordination import znodes
from brokerd.coordination.topic_cache import ASSIGNMENT, TopicCache
from brokerd.coordination.znodes import PartitionState, TopicAssignment


def wait_for(events: list[tuple[str, int]], count: int) -> None:
    deadline = time.monotonic() + 5
    while len(events) < count:
        assert time.monotonic() < deadline, f"only {events} arrived"
        time.sleep(0.01)


def test_a_state_changed_with_the_assignment_is_read_and_watched_again(
        zk: KazooClient) -> None:
    zk.create(znodes.topic_path("t"), TopicAssignment(uuid.uuid4(), {0: (2, 3)}).encode(),
              makepath=True)
    state_path = znodes.partition_state_path("t", 0)
    zk.create(state_path, PartitionState(2, 0, (2, 3)).encode(), makepath=True)
    events: list[tuple[str, int]] = []
    cache = TopicCache(zk, lambda name, key: events.append((name, key)))
    cache.read("t", {ASSIGNMENT})

    zk.set(state_path, PartitionState(2, 1, (2, 1)).encode())
    zk.set(znodes.topic_path("t"), TopicAssignment(
        cache.topics["t"].topic_id, {0: (1, 2)}).encode())
    wait_for(events, 2)
    metadata = cache.read("t", {key for _, key in events})
    assert metadata is not None and metadata.states[0].isr == (2, 1)

    zk.set(state_path, PartitionState(1, 2, (2, 1)).encode())  # the election after it
    wait_for(events, 3)
    assert events[2] == ("t", 0)
    metadata = cache.read("t", {0})
    assert metadata is not None and metadata.states[0].leader == 1


def test_a_state_read_back_at_its_cached_version_is_no_change_and_stays_watched(
        zk: KazooClient) -> None:
    """The controller's own writes come back through its watches: the re-read (which
    re-arms the watch) returns the cached topic itself, so nothing is posted again."""
    zk.create(znodes.topic_path("t"), TopicAssignment(uuid.uuid4(), {0: (2, 3)}).encode(),
              makepath=True)
    state_path = znodes.partition_state_path("t", 0)
    zk.create(state_path, PartitionState(2, 0, (2, 3)).encode(), makepath=True)
    events: list[tuple[str, int]] = []
    cache = TopicCache(zk, lambda name, key: events.append((name, key)))
    cache.read("t", {ASSIGNMENT})

    written = PartitionState(3, 1, (3,))
    stat = zk.set(state_path, written.encode())
    cache.put_states("t", {0: dataclasses.replace(written, zk_version=stat.version)})
    cached = cache.topics["t"]
    wait_for(events, 1)
    assert cache.read("t", {0}) is cached

    zk.set(state_path, PartitionState(2, 2, (2, 3)).encode())  # someone else's change
    wait_for(events, 2)
    metadata = cache.read("t", {0})
    assert metadata is not cached and metadata is not None and metadata.states[0].leader == 2
