"""A topic's znodes deleted against real ZooKeeper: every partition node goes, in batches,
and a batch that cannot go as planned is still removed by the fallback."""

from __future__ import annotations

import uuid

from kazoo.client import KazooClient

from brokerd.coordination import writes, znodes
from brokerd.coordination.znodes import PartitionState, TopicAssignment


def a_topic(zk: KazooClient, name: str, partitions: int) -> None:
    writes.create_topic(zk, name, TopicAssignment(
        uuid.uuid4(), {p: (1, 2) for p in range(partitions)}), {"retention.ms": "1000"})
    writes.create_states(zk, {(name, p): PartitionState(1, 0, (1, 2))
                              for p in range(partitions)})


def test_every_node_of_a_topic_goes_and_other_topics_stay(zk: KazooClient) -> None:
    zk.ensure_path(znodes.TOPICS)
    a_topic(zk, "big", 2 * writes.BATCH + 17)
    a_topic(zk, "kept", 3)
    writes.delete_topic(zk, "big")
    assert not zk.exists(znodes.topic_path("big"))
    assert not zk.exists(znodes.topic_config_path("big"))
    assert sorted(zk.get_children(f"{znodes.topic_path('kept')}/partitions")) == ["0", "1", "2"]


def test_a_batch_with_an_unexpected_node_falls_back_to_the_recursive_delete(
        zk: KazooClient) -> None:
    """A partition without its state and one with an extra child fail their batches'
    transactions; the topic still goes whole."""
    zk.ensure_path(znodes.TOPICS)
    a_topic(zk, "odd", 5)
    zk.delete(znodes.partition_state_path("odd", 1))
    zk.create(f"{znodes.topic_path('odd')}/partitions/3/extra", b"")
    writes.delete_topic(zk, "odd")
    assert not zk.exists(znodes.topic_path("odd"))
    writes.delete_topic(zk, "odd")  # already gone: nothing to do, no error


def test_states_for_a_topic_deleted_meanwhile_bring_nothing_back(zk: KazooClient) -> None:
    """The controller chose leaders for a topic a client deleted meanwhile: its states are
    not written, and its node is not recreated (empty, unreadable by every broker)."""
    zk.ensure_path(znodes.TOPICS)
    a_topic(zk, "gone", 3)
    writes.delete_topic(zk, "gone")
    writes.create_states(zk, {("gone", p): PartitionState(1, 0, (1, 2)) for p in range(3)}
                         | {("other", 0): PartitionState(1, 0, (1, 2))})
    assert not zk.exists(znodes.topic_path("gone"))
    assert not zk.exists(znodes.topic_path("other"))
