"""Failover: the controller re-elects leaders in one fenced batch when a broker's session
ends, and a newly elected controller repairs what its dead predecessor led."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid

import pytest
from kazoo.client import KazooClient

from brokerd.coordination import writes, znodes
from brokerd.coordination.zk import ZkCoordinator
from brokerd.coordination.znodes import PartitionState
from tests.integration.coordination.harness import Events, read_state, start_broker

PARTITIONS = 12
REPLICAS = {p: tuple((p + r) % 3 + 1 for r in range(3)) for p in range(PARTITIONS)}


def all_states(zk: KazooClient, topic: str = "t") -> dict[int, PartitionState]:
    return {p: read_state(zk, topic, p) for p in range(PARTITIONS)}


async def start_three_with_topic(zk_connect: str) -> list[tuple[ZkCoordinator, Events]]:
    """Brokers 1-3 (broker 1 the controller) and topic ``t`` over :data:`REPLICAS`, once
    broker 1's events show every partition's first state."""
    started = [await start_broker(zk_connect, b) for b in (1, 2, 3)]
    controller, events = started[0]
    await events.until(lambda: set(events.brokers) == {1, 2, 3})
    await controller.create_topic("t", REPLICAS, {}, uuid.uuid4())
    await events.until(lambda: len(getattr(events.topics.get("t"), "states", {})) == PARTITIONS)
    return started


def assert_failed_over(before: dict[int, PartitionState], after: dict[int, PartitionState],
                       dead: int, controller_epoch: int) -> None:
    for p, old in before.items():
        new = after[p]
        assert dead not in new.isr and new.leader in new.isr
        expected_isr = tuple(b for b in old.isr if b != dead)
        assert new.isr == expected_isr
        if old.leader == dead:
            assert new.leader == next(b for b in REPLICAS[p] if b in expected_isr)
            assert new.leader_epoch == old.leader_epoch + 1
            assert new.controller_epoch == controller_epoch
        else:
            assert (new.leader, new.leader_epoch) == (old.leader, old.leader_epoch)


def test_broker_session_loss_fails_over_its_partitions(zk_connect: str, zk: KazooClient
                                                       ) -> None:
    async def scenario() -> None:
        started = await start_three_with_topic(zk_connect)
        controller, events = started[0]
        try:
            before = all_states(zk)
            assert {s.leader for s in before.values()} == {1, 2, 3}

            await asyncio.to_thread(started[1][0]._client.stop)  # broker 2's session ends
            await events.until(lambda: all(
                2 not in s.isr for s in events.topic("t").states.values()))
            assert_failed_over(before, all_states(zk), 2, controller.controller_epoch)
        finally:
            for coordinator, _ in started:
                await coordinator.close()

    asyncio.run(scenario())


def test_new_controller_repairs_partitions_of_the_dead_one(zk_connect: str, zk: KazooClient
                                                           ) -> None:
    async def scenario() -> None:
        started = [await start_broker(zk_connect, b) for b in (1, 2, 3)]
        first, events = started[0]
        survivor, survivor_events = started[1]
        try:
            await events.until(lambda: set(events.brokers) == {1, 2, 3})
            await first.create_topic("t", REPLICAS, {}, uuid.uuid4())
            await survivor_events.until(lambda: len(getattr(
                survivor_events.topics.get("t"), "states", {})) == PARTITIONS)
            before = all_states(zk)

            await asyncio.to_thread(first._client.stop)  # the controller dies
            await survivor_events.until(lambda: survivor_events.controller in (2, 3) and all(
                1 not in s.isr for s in survivor_events.topic("t").states.values()))
            epoch = int(zk.get(znodes.CONTROLLER_EPOCH)[0])
            assert epoch == 2
            assert_failed_over(before, all_states(zk), 1, epoch)
        finally:
            for coordinator, _ in started:
                await coordinator.close()

    asyncio.run(scenario())


def test_no_live_isr_member_leaves_the_partition_offline_unless_unclean(
        zk_connect: str, zk: KazooClient) -> None:
    async def scenario() -> None:
        controller, events = await start_broker(zk_connect, 1)
        other, _ = await start_broker(zk_connect, 2)
        try:
            await events.until(lambda: set(events.brokers) == {1, 2})
            await controller.create_topic("clean", {0: (2, 1)}, {}, uuid.uuid4())
            await controller.create_topic(
                "unclean", {0: (2, 1)}, {"unclean.leader.election.enable": "true"},
                uuid.uuid4())
            await events.until(lambda: all(
                getattr(events.topics.get(t), "states", {}) for t in ("clean", "unclean")))
            for topic in ("clean", "unclean"):  # the leader shrank the ISR to itself
                state = read_state(zk, topic, 0)
                assert await other.update_isr(topic, 0, state.leader_epoch, (2,),
                                              state.zk_version) is not None

            await asyncio.to_thread(other._client.stop)
            await events.until(lambda: all(
                events.topic(t).states[0].leader != 2 for t in ("clean", "unclean")))
            clean, unclean = read_state(zk, "clean", 0), read_state(zk, "unclean", 0)
            assert (clean.leader, clean.isr, clean.leader_epoch) == (-1, (2,), 1)
            assert (unclean.leader, unclean.isr, unclean.leader_epoch) == (1, (1,), 1)
        finally:
            await controller.close()

    asyncio.run(scenario())


def test_a_deposed_controllers_writes_are_fenced(zk: KazooClient) -> None:
    epoch, epoch_version = writes.bump_controller_epoch(zk)
    zk.ensure_path(znodes.topic_path("t"))  # the topic's node: states are created under it
    writes.create_states(zk, {("t", p): PartitionState(1, 0, (1, 2), epoch) for p in (0, 1)})
    current = read_state(zk, "t", 0)
    moved = PartitionState(2, 1, (2,), epoch, current.zk_version)

    written, stale, rolled_back = writes.write_states_fenced(zk, epoch_version, {
        ("t", 0): PartitionState(1, 0, (1,), epoch, 7), ("t", 1): moved})
    assert (written, stale, rolled_back) == ({}, [("t", 0)], [("t", 1)])
    written, stale, rolled_back = writes.write_states_fenced(zk, epoch_version, {
        ("t", 1): moved})
    assert written == {("t", 1): dataclasses.replace(moved, zk_version=1)}

    writes.bump_controller_epoch(zk)  # a successor was elected
    with pytest.raises(writes.ControllerFencedError):
        writes.write_states_fenced(zk, epoch_version, {("t", 0): moved})
    assert read_state(zk, "t", 0) == current


def test_expired_session_re_registers_and_re_reads(zk_connect: str, zk: KazooClient) -> None:
    async def scenario() -> None:
        controller, events = await start_broker(zk_connect, 1)
        other, other_events = await start_broker(zk_connect, 2)
        try:
            await events.until(lambda: set(events.brokers) == {1, 2})
            await controller.create_topic("t", {0: (2, 1)}, {}, uuid.uuid4())
            await other_events.until(lambda: bool(getattr(other_events.topics.get("t"),
                                                          "states", {})))
            assert read_state(zk, "t", 0).leader == 2

            hosts, chroot = zk_connect.split("/", 1)
            thief = KazooClient(hosts=f"{hosts}/{chroot}", client_id=other._client.client_id)
            await asyncio.to_thread(thief.start)  # same session, then closed: it expires
            await asyncio.to_thread(thief.stop)
            await other_events.until(lambda: other_events.topic("t").states[0].leader == 1
                                     and 2 in other_events.brokers, timeout=10)
            assert read_state(zk, "t", 0).isr == (1,)
        finally:
            await other.close()
            await controller.close()

    asyncio.run(scenario())
