"""The controller's write session (``brokerd.coordination.write_session``) against real
ZooKeeper: started only when the controller first writes, inside the broker's chroot, and
the one its partition-state batches go through, not the watching session."""

from __future__ import annotations

import uuid

from kazoo.client import KazooClient

from brokerd.coordination import writes, znodes
from brokerd.coordination.controller import Controller
from brokerd.coordination.reconnect import split_connect
from brokerd.coordination.state_watch import StateWatch
from brokerd.coordination.topic_cache import ASSIGNMENT, TopicCache
from brokerd.coordination.write_session import WriteSession
from brokerd.coordination.znodes import PartitionState, TopicAssignment


def write_session(zk_connect: str) -> WriteSession:
    hosts, chroot = split_connect(zk_connect)
    return WriteSession(hosts, chroot, session_timeout_s=10)


def test_the_session_starts_on_first_use_inside_the_chroot_and_closes(
        zk_connect: str, zk: KazooClient) -> None:
    session = write_session(zk_connect)
    assert not session.started

    client = session.client()
    assert session.started and session.client() is client
    client.create("/written-here", b"x")
    assert zk.get("/written-here")[0] == b"x"  # zk is rooted at the same chroot

    session.close()
    assert not session.started and not client.connected


def test_the_controllers_state_writes_go_through_the_write_session(
        zk_connect: str, zk: KazooClient) -> None:
    """Broker 2, the leader, is gone: the controller elects 3 and writes that through the
    write session (started by the write), while its own session only read."""
    zk.create(znodes.topic_path("t"), TopicAssignment(uuid.uuid4(), {0: (2, 3)}).encode(),
              makepath=True)
    zk.create(znodes.partition_state_path("t", 0), PartitionState(2, 0, (2, 3)).encode(),
              makepath=True)
    cache = TopicCache(zk, lambda name, key: None, StateWatch(zk, lambda *event: None))
    cache.read("t", {ASSIGNMENT})
    session = write_session(zk_connect)
    published: list[object] = []
    controller = Controller(zk, cache, 1, lambda epoch, written: published.append(written),
                            session.client)
    controller.activate(*writes.bump_controller_epoch(zk))
    controller.live = {1, 3}
    try:
        assert not session.started
        assert controller.repair(None) == 1

        assert session.started
        data, stat = zk.get(znodes.partition_state_path("t", 0))
        state = PartitionState.decode(data, stat.version)
        assert (state.leader, state.isr) == (3, (3,))
        assert cache.topics["t"].states[0] == state and published
    finally:
        session.close()
