"""TopicCache against real ZooKeeper: every state change is seen, even one that lands
while the topic's assignment is being re-read (a reassignment finishing, then a
preferred-leader election, on the controller's own broker), and a change whose state this
broker already holds (pushed, or written by itself) is not read back."""

from __future__ import annotations

import dataclasses
import time
import uuid

from kazoo.client import KazooClient

from brokerd.coordination import znodes
from brokerd.coordination.state_watch import StateWatch
from brokerd.coordination.topic_cache import ASSIGNMENT, TopicCache
from brokerd.coordination.znodes import PartitionState, TopicAssignment


def wait_for(events: list[tuple[str, int]], count: int) -> None:
    deadline = time.monotonic() + 5
    while len(events) < count:
        assert time.monotonic() < deadline, f"only {events} arrived"
        time.sleep(0.01)


class CountingStateWatch(StateWatch):
    """The real watch, counting the state reads it sends."""

    def __init__(self, zk: KazooClient, events: list[tuple[str, int]]) -> None:
        super().__init__(zk, lambda name, partition, _settle: events.append((name, partition)))
        self.reads = 0

    def read_async(self, topic: str, partition: int) -> object:
        self.reads += 1
        return super().read_async(topic, partition)


def new_cache(zk: KazooClient) -> tuple[TopicCache, list[tuple[str, int]], CountingStateWatch]:
    """A cache whose watch events (one-shot and persistent) land in the returned list."""
    events: list[tuple[str, int]] = []
    watch = CountingStateWatch(zk, events)
    watch.add()
    return TopicCache(zk, lambda name, key: events.append((name, key)), watch), events, watch


def one_partition_topic(zk: KazooClient) -> tuple[TopicCache, list[tuple[str, int]], str]:
    """Topic ``t`` (one partition on brokers 2 and 3, led by 2) read into a fresh cache:
    the cache, the watch events it reports, and the partition's state path."""
    zk.create(znodes.topic_path("t"), TopicAssignment(uuid.uuid4(), {0: (2, 3)}).encode(),
              makepath=True)
    state_path = znodes.partition_state_path("t", 0)
    zk.create(state_path, PartitionState(2, 0, (2, 3)).encode(), makepath=True)
    cache, events, _ = new_cache(zk)
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
    """A read naming a state at its cached version returns the cached topic itself, so
    nothing is posted again, and later changes are still notified."""
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
    cache, events, watch = new_cache(zk)
    for name in names:
        cache.read(name, {ASSIGNMENT})

    zk.set(znodes.partition_state_path("a", 0), PartitionState(2, 1, (2,)).encode())
    zk.set(znodes.partition_state_path("b", 1), PartitionState(2, 1, (2,)).encode())
    own = PartitionState(2, 1, (2,))
    stat = zk.set(znodes.partition_state_path("c", 0), own.encode())
    cache.put_states("c", {0: dataclasses.replace(own, zk_version=stat.version)})
    cached_c = cache.topics["c"]
    wait_for(events, 3)

    reads = watch.reads
    changed = cache.read_changed({"a": {0}, "b": {1}, "c": {0}})

    assert watch.reads == reads + 2  # c's own write is not read back
    assert sorted(changed) == ["a", "b"]
    a, b = changed["a"], changed["b"]
    assert a is not None and a.states[0].leader == 2 and a.states[1].leader == 1
    assert b is not None and b.states[1].leader == 2 and b.states[0].leader == 1
    assert cache.topics["a"] is a and cache.topics["c"] is cached_c

    zk.set(znodes.partition_state_path("c", 0), PartitionState(1, 2, (1, 2)).encode())
    wait_for(events, 4)  # still watched, though not read
    assert events[3] == ("c", 0)
    assert cache.read_changed({"c": {0}})["c"].states[0].leader == 1  # type: ignore[union-attr]


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


def test_pushed_states_cover_their_notifications_and_nothing_else(zk: KazooClient) -> None:
    """A broker told of a state by the controller's push reads no notification that state
    covers, however many changes led to it, and still reads a later change that no push
    brought (a leader's ISR write)."""
    cache, events, state_path = one_partition_topic(zk)
    watch = cache._state_watch
    assert isinstance(watch, CountingStateWatch)
    topic_id = cache.topics["t"].topic_id
    for epoch in (1, 2, 3):  # a controller's three decisions in a row
        stat = zk.set(state_path, PartitionState(3, epoch, (3,)).encode())
    cache.offer_states("t", topic_id, {0: PartitionState(3, 3, (3,), zk_version=stat.version)})
    wait_for(events, 3)
    reads = watch.reads

    assert cache.read_changed({"t": {0}}) == {}
    assert watch.reads == reads

    zk.set(state_path, PartitionState(3, 3, (3, 2)).encode())  # the leader's ISR expansion
    wait_for(events, 4)
    changed = cache.read_changed({"t": {0}})
    assert watch.reads == reads + 1
    assert changed["t"] is not None and changed["t"].states[0].isr == (3, 2)


def test_a_push_older_than_the_notified_changes_does_not_cover_them(zk: KazooClient) -> None:
    cache, events, state_path = one_partition_topic(zk)
    topic_id = cache.topics["t"].topic_id
    first = zk.set(state_path, PartitionState(3, 1, (3,)).encode())
    zk.set(state_path, PartitionState(2, 2, (2,)).encode())
    cache.offer_states("t", topic_id, {0: PartitionState(3, 1, (3,), zk_version=first.version)})
    wait_for(events, 2)

    changed = cache.read_changed({"t": {0}})

    assert changed["t"] is not None and changed["t"].states[0].leader_epoch == 2


def test_a_state_node_created_after_a_missing_read_is_notified_at_once(
        zk: KazooClient) -> None:
    """A partition whose state the controller has not written yet reads as missing; its
    creation is reported unsettled (to be read at once) and then read."""
    zk.create(znodes.topic_path("n"), TopicAssignment(uuid.uuid4(), {0: (1,)}).encode(),
              makepath=True)
    settled: list[bool] = []
    events: list[tuple[str, int]] = []

    def on_state(name: str, partition: int, settle: bool) -> None:
        settled.append(settle)
        events.append((name, partition))

    watch = StateWatch(zk, on_state)
    watch.add()
    cache = TopicCache(zk, lambda name, key: events.append((name, key)), watch)
    metadata = cache.read("n", {ASSIGNMENT})
    assert metadata is not None and metadata.states == {}

    zk.create(znodes.partition_state_path("n", 0), PartitionState(1, 0, (1,)).encode(),
              makepath=True)
    wait_for(events, 1)
    assert events == [("n", 0)] and settled == [False]
    changed = cache.read_changed({"n": {0}})
    assert changed["n"] is not None and changed["n"].states[0].leader == 1
