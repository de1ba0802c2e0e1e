"""The controller's pushed states (LeaderAndIsr semantics) against real ZooKeeper: a broker
applies a push at once, without reading the znode, and the re-read its watch then does
finds nothing new; a controller's failover output reaches the other brokers through the
push, part by part as the writes are answered; a stale push is refused."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import uuid

import pytest
from kazoo.client import KazooClient

from brokerd.coordination import writes, znodes
from brokerd.coordination.state_feed import PushedTopic, StaleControllerError, Written
from brokerd.coordination.zk import ZkCoordinator
from brokerd.coordination.znodes import PartitionState
from tests.integration.coordination.harness import Events, read_state, start_broker


async def topic_on(coordinators: list[tuple[ZkCoordinator, Events]], name: str,
                   replicas: dict[int, tuple[int, ...]]) -> uuid.UUID:
    topic_id = uuid.uuid4()
    await coordinators[0][0].create_topic(name, replicas, {}, topic_id)
    for _, events in coordinators:
        await events.until(functools.partial(read_all, events, name, len(replicas)), 10)
    return topic_id


def read_all(events: Events, name: str, count: int) -> bool:
    metadata = events.topics.get(name)
    return metadata is not None and len(metadata.states) == count


def test_a_pushed_state_is_applied_without_a_read_and_its_watch_finds_nothing_new(
        zk_connect: str, zk: KazooClient) -> None:
    async def scenario() -> None:
        first = await start_broker(zk_connect, 1)
        second = await start_broker(zk_connect, 2)
        try:
            topic_id = await topic_on([first, second], "t", {0: (1, 2)})
            coordinator, events = second
            current = read_state(zk, "t", 0)
            # The state the controller is about to write: version + 1.  Pushed before it
            # is in ZooKeeper, so the broker cannot have read it.
            ahead = dataclasses.replace(current, leader=2, leader_epoch=current.leader_epoch + 1,
                                        isr=(2,), zk_version=current.zk_version + 1)
            applied = coordinator.states.pushed(1, [PushedTopic("t", topic_id, {0: ahead})])
            assert applied == {"t": {0: ahead}}
            assert events.topic("t").states[0] == ahead
            posts = events.topic_posts

            zk.set(znodes.partition_state_path("t", 0), ahead.encode(), current.zk_version)
            await coordinator.barrier()  # the watch's re-read ran on the ZooKeeper thread
            await asyncio.sleep(0.5)
            await coordinator.barrier()
            assert events.topic_posts == posts  # read back at the pushed version: no change
            assert events.topic("t").states[0] == ahead

            # The watch was re-armed by that read: a later change still arrives.
            zk.set(znodes.partition_state_path("t", 0),
                   dataclasses.replace(ahead, isr=(2, 1)).encode(), ahead.zk_version)
            await events.until(lambda: events.topic("t").states[0].isr == (2, 1))

            with pytest.raises(StaleControllerError):
                coordinator.states.pushed(0, [PushedTopic("t", topic_id, {0: current})])
            assert events.topic("t").states[0].isr == (2, 1)
        finally:
            await second[0].close()
            await first[0].close()

    asyncio.run(scenario())


def test_the_controllers_failover_writes_are_pushed_to_the_replicas_hosts(
        zk_connect: str, zk: KazooClient) -> None:
    async def scenario() -> None:
        first = await start_broker(zk_connect, 1)  # the controller
        second = await start_broker(zk_connect, 2)
        third = await start_broker(zk_connect, 3)
        pushes: list[tuple[int, Written]] = []
        first[0].states.push = lambda epoch, written: pushes.append((epoch, written))
        try:
            await first[1].until(lambda: first[1].controller == 1)
            await topic_on([first, second, third], "t", {0: (3, 2), 1: (3, 1), 2: (1, 2)})
            await third[0].close()  # deregisters: partitions 0 and 1 lose their leader
            await first[1].until(lambda: all(
                first[1].topic("t").states[p].leader in (1, 2) for p in (0, 1)), 10)
            await first[1].until(lambda: bool(pushes))
            [(epoch, written)] = [push for push in pushes
                                  if any(0 in states for _, states in push[1])]
            assert epoch == first[0].controller_epoch
            [(metadata, states)] = written
            assert metadata.name == "t" and set(states) == {0, 1}
            assert states[0] == read_state(zk, "t", 0)  # with the version it was written at
        finally:
            await second[0].close()
            await first[0].close()

    asyncio.run(scenario())


def test_written_states_are_handed_on_in_chunks_as_their_answers_arrive(
        zk: KazooClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writes, "WRITTEN_CHUNK", 200)
    epoch, epoch_version = writes.bump_controller_epoch(zk)
    keys = [("t", p) for p in range(450)]
    zk.ensure_path(znodes.topic_path("t"))  # the topic's node: states are created under it
    writes.create_states(zk, {key: PartitionState(1, 0, (1, 2), epoch) for key in keys})
    chunks: list[dict[tuple[str, int], PartitionState]] = []
    written, stale, rolled_back = writes.write_states_fenced(
        zk, epoch_version, {key: PartitionState(2, 1, (2,), epoch, 0) for key in keys},
        chunks.append)
    assert stale == rolled_back == []
    assert [len(chunk) for chunk in chunks] == [200, 200, 50]  # 100 per transaction
    assert {key: state for chunk in chunks for key, state in chunk.items()} == written
    assert all(state.zk_version == 1 for state in written.values())
