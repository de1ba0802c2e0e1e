"""An election or reassignment a client asked for (ElectLeaders, AlterPartitionReassignments)
whose controller loses its ZooKeeper connection at the write: the controller repeats the
write once reconnected and answers with the outcome it decided, as for the topic writes of
``test_admin_writes_through_blips``.  Before, the client got a retriable error; and a
repeat that decided afresh would have found its own work done ("not needed", "nothing to
cancel")."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from kazoo.client import KazooClient

from brokerd.coordination import election, znodes
from brokerd.coordination.reconnect import split_connect
from brokerd.coordination.zk import ZkCoordinator
from tests.integration.coordination.harness import Events, read_state, start_broker
from tests.support.zk_cut_proxy import ZkCutProxy

pytestmark = pytest.mark.integration

REPLICAS: dict[int, tuple[int, ...]] = {p: (1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3)
                                       for p in range(3)}
CUTS = pytest.mark.parametrize("reply_lost", [True, False], ids=["reply-lost", "request-lost"])


Scenario = Callable[[ZkCoordinator, Events, ZkCutProxy], Coroutine[Any, Any, None]]


def run_with_controller_through_proxy(zk_connect: str, scenario: Scenario) -> None:
    """Brokers 1-3, the controller (1) connected through a cut proxy, the others directly;
    ``scenario`` gets the controller, its events and the proxy."""
    zookeeper, chroot = split_connect(zk_connect)

    async def run() -> None:
        proxy = ZkCutProxy(zookeeper)
        controller, events = await start_broker(f"{proxy.address}{chroot}", 1)
        others = [await start_broker(zk_connect, b) for b in (2, 3)]
        try:
            await events.until(lambda: set(events.brokers) == {1, 2, 3} and events.controller == 1,
                               timeout=30)
            await scenario(controller, events, proxy)
        finally:
            for coordinator, _ in [(controller, events), *others]:
                await coordinator.close()
            proxy.close()

    asyncio.run(run())


async def quiet(coordinator: ZkCoordinator) -> None:
    """Let the controller's reactions to the last change (its watches' re-reads) finish,
    so the next request through the proxy is the one under test."""
    await asyncio.sleep(0.5)
    await coordinator.barrier()


@CUTS
def test_a_preferred_election_cut_at_its_write_answers_elected(
        zk_connect: str, zk: KazooClient, reply_lost: bool) -> None:
    """Every partition led by its second replica; ElectLeaders (preferred) with the
    controller's state write cut: each partition answers ELECTED with its preferred
    leader, and ZooKeeper holds that leader."""
    async def scenario(controller: ZkCoordinator, events: Events, proxy: ZkCutProxy) -> None:
        await controller.create_topic("t", REPLICAS, {}, uuid.uuid4())
        await events.until(lambda: len(getattr(events.topics.get("t"), "states", {})) == 3,
                           timeout=30)
        for partition, replicas in REPLICAS.items():  # as after a failover and a return
            state = read_state(zk, "t", partition)
            moved = dataclasses.replace(state, leader=replicas[1],
                                        leader_epoch=state.leader_epoch + 1)
            zk.set(znodes.partition_state_path("t", partition), moved.encode(),
                   version=state.zk_version)
        await events.until(lambda: all(
            events.topic("t").states[p].leader == r[1] for p, r in REPLICAS.items()), timeout=30)
        await quiet(controller)
        proxy.arm(1, reply_lost)
        outcomes = await controller.elect_leaders(False, [("t", p) for p in REPLICAS], 20.0)
        assert proxy.cut.is_set()
        assert outcomes == {("t", p): (election.Requested.ELECTED, r[0])
                            for p, r in REPLICAS.items()}
        assert [read_state(zk, "t", p).leader for p in REPLICAS] == [
            r[0] for r in REPLICAS.values()]

    run_with_controller_through_proxy(zk_connect, scenario)


@CUTS
def test_a_cancelled_reassignment_cut_at_its_write_answers_cancelled(
        zk_connect: str, zk: KazooClient, reply_lost: bool) -> None:
    """A reassignment in progress (its new replica never catches up: no broker copies
    data here), cancelled with the controller's assignment write cut: the cancellation
    answers success, not NO_REASSIGNMENT_IN_PROGRESS, and the original replicas are back
    with nothing adding or removing (in the order Kafka's cancellation leaves: the
    reassignment's list without the replicas it was adding)."""
    async def scenario(controller: ZkCoordinator, events: Events, proxy: ZkCutProxy) -> None:
        await controller.create_topic("r", {0: (1, 2)}, {}, uuid.uuid4())
        await events.until(lambda: 0 in getattr(events.topics.get("r"), "states", {}),
                           timeout=30)
        started = await controller.alter_reassignments({("r", 0): (2, 3)}, True)
        assert started == {("r", 0): (election.Altered.STARTED, None)}
        await events.until(lambda: events.topic("r").adding_replicas.get(0) == (3,), timeout=30)
        await quiet(controller)
        proxy.arm(1, reply_lost)
        cancelled = await controller.alter_reassignments({("r", 0): None}, True)
        assert proxy.cut.is_set()
        assert cancelled == {("r", 0): (election.Altered.STARTED, None)}
        data, _ = zk.get(znodes.topic_path("r"))
        restored = znodes.TopicAssignment.decode("r", data)
        assert (restored.replicas, restored.adding, restored.removing) == ({0: (2, 1)}, {}, {})

    run_with_controller_through_proxy(zk_connect, scenario)
