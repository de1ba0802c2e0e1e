"""The controller's write session (``brokerd.coordination.write_session``) against real
ZooKeeper: started only when the controller first writes, inside the broker's chroot, and
the one its partition-state batches go through, not the watching session."""

from __future__ import annotations

import uuid

from kazoo.client import KazooClient

from brokerd.coordination import writes, znodes
from brokerd.coordination.controller import Controller
from brokerd.coordination.topic_cache import ASSIGNMENT, TopicCache
from brokerd.coordination.write_session import WriteSession
from brokerd.coordination.zk import split_connect
from brokerd.coordination.znodes import PartitionState, TopicAssignment


def write_session(zk_connect: str, made: list[KazooClient]) -> WriteSession:
    hosts, chroot = split_connect(zk_connect)

    def make() -> KazooClient:
        made.append(KazooClient(hosts=hosts))
        return made[-1]
    return WriteSession(make, chroot, start_timeout_s=10)


def test_the_session_starts_on_first_use_inside_the_chroot_and_closes(
        zk_connect: str, zk: KazooClient) -> None:
    made: list[KazooClient] = []
    session = write_session(zk_connect, made)
    assert not session.started and not made

    client = session.client()
    assert session.client() is client and len(made) == 1
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
    cache = TopicCache(zk, lambda name, key: None)
    cache.read("t", {ASSIGNMENT})
    made: list[KazooClient] = []
    session = write_session(zk_connect, made)
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
