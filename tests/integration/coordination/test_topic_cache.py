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


def one_partition_topic(zk: KazooClient) -> tuple[TopicCache, list[tuple[str, int]], str]:
    """Topic ``t`` (one partition on brokers 2 and 3, led by 2) read into a fresh cache:
    the cache, the watch events it reports, and the partition's state path."""
    zk.create(znodes.topic_path("t"), TopicAssignment(uuid.uuid4(), {0: (2, 3)}).encode(),
              makepath=True)
    state_path = znodes.partition_state_path("t", 0)
    zk.create(state_path, PartitionState(2, 0, (2, 3)).encode(), makepath=True)
    events: list[tuple[str, int]] = []
    cache = TopicCache(zk, lambda name, key: events.append((name, key)))
    cache.read("t", {ASSIGNMENT})
    return cache, events, state_path


def test_a_state_changed_with_the_assignment_is_read_and_watched_again(
        zk: KazooClient) -> None:
    cache, events, state_path = one_partition_topic(zk)

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
    cache, events, state_path = one_partition_topic(zk)

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


def test_a_batch_re_read_across_topics_returns_only_the_topics_that_changed(
        zk: KazooClient) -> None:
    """The flush after a failover re-reads many topics at once (all requests sent, then
    all answers collected): each changed topic comes back with its fresh states, and a
    topic whose states read back at the cached versions (the controller's own writes)
    is left out."""
    names = ("a", "b", "c")
    for name in names:
        zk.create(znodes.topic_path(name),
                  TopicAssignment(uuid.uuid4(), {0: (1, 2), 1: (2, 1)}).encode(),
                  makepath=True)
        for partition in (0, 1):
            zk.create(znodes.partition_state_path(name, partition),
                      PartitionState(1, 0, (1, 2)).encode(), makepath=True)
    events: list[tuple[str, int]] = []
    cache = TopicCache(zk, lambda name, key: events.append((name, key)))
    for name in names:
        cache.read(name, {ASSIGNMENT})

    zk.set(znodes.partition_state_path("a", 0), PartitionState(2, 1, (2,)).encode())
    zk.set(znodes.partition_state_path("b", 1), PartitionState(2, 1, (2,)).encode())
    own = PartitionState(2, 1, (2,))
    stat = zk.set(znodes.partition_state_path("c", 0), own.encode())
    cache.put_states("c", {0: dataclasses.replace(own, zk_version=stat.version)})
    cached_c = cache.topics["c"]
    wait_for(events, 3)

    changed = cache.read_changed({"a": {0}, "b": {1}, "c": {0}})

    assert sorted(changed) == ["a", "b"]
    a, b = changed["a"], changed["b"]
    assert a is not None and a.states[0].leader == 2 and a.states[1].leader == 1
    assert b is not None and b.states[1].leader == 2 and b.states[0].leader == 1
    assert cache.topics["a"] is a and cache.topics["c"] is cached_c

    zk.set(znodes.partition_state_path("c", 0), PartitionState(1, 2, (1, 2)).encode())
    wait_for(events, 4)  # the batch re-read armed c's watch again
    assert events[3] == ("c", 0)


def test_a_re_read_older_than_the_cached_state_leaves_the_cached_one(zk: KazooClient) -> None:
    """In an ensemble the watching session's server may lag behind the one the
    controller's write session wrote to: a state read back at an older version than the
    cached one (here: cached as written at a version ZooKeeper has not reached) must not
    take the partition back, while a later, newer read still lands."""
    cache, events, state_path = one_partition_topic(zk)
    ahead = PartitionState(3, 5, (3,), zk_version=7)
    cache.put_states("t", {0: ahead})
    cached = cache.topics["t"]

    zk.set(state_path, PartitionState(2, 1, (2, 3)).encode())  # version 1 < 7
    wait_for(events, 1)
    assert cache.read("t", {0}) is cached
    assert cache.topics["t"].states[0] == ahead

    for epoch in range(2, 9):  # ZooKeeper's node passes version 7
        zk.set(state_path, PartitionState(2, epoch, (2, 3)).encode())
    wait_for(events, 2)
    metadata = cache.read("t", {0})
    assert metadata is not None and metadata.states[0].zk_version == 8
    assert metadata.states[0].leader_epoch == 8
