"""Controlled shutdown, preferred-leader election, reassignment and dynamic broker config
against real ZooKeeper, with in-process coordinators as brokers."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid

import pytest
from kazoo.client import KazooClient

from brokerd.coordination import writes, znodes
from tests.integration.cluster.harness import wait_until
from tests.integration.coordination.harness import read_state, start_broker, write_admin

REPLICAS = {p: tuple((p + r) % 3 + 1 for r in range(3)) for p in range(6)}


def leaders(zk: KazooClient, topic: str, count: int) -> dict[int, int]:
    return {p: read_state(zk, topic, p).leader for p in range(count)}


def test_controlled_shutdown_moves_leadership_and_isr_membership(
        zk_connect: str, zk: KazooClient) -> None:
    async def scenario() -> None:
        started = [await start_broker(zk_connect, b) for b in (1, 2, 3)]
        (first, events), (second, _), (third, third_events) = started
        try:
            await events.until(lambda: set(events.brokers) == {1, 2, 3})
            await first.create_topic("t", REPLICAS, {}, uuid.uuid4())
            await events.until(lambda: len(getattr(events.topics.get("t"), "states", {})) == 6)
            assert set(leaders(zk, "t", 6).values()) == {1, 2, 3}

            assert await second.controlled_shutdown(5.0)
            states = [read_state(zk, "t", p) for p in range(6)]
            assert all(s.leader != 2 and 2 not in s.isr for s in states)

            assert first.is_controller
            assert await first.controlled_shutdown(5.0)  # the controller moves its own
            await third_events.until(lambda: third_events.controller == 3)
            states = [read_state(zk, "t", p) for p in range(6)]
            assert all(s.leader == 3 and s.isr == (3,) for s in states)
        finally:
            for coordinator, _ in started:
                await coordinator.close()

    asyncio.run(scenario())


def test_controlled_shutdown_completes_while_the_zookeeper_thread_is_busy(
        zk_connect: str, zk: KazooClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """A leaving broker whose ZooKeeper thread is busy the whole time (as it is re-reading
    thousands of partition states while the controller moves them) still sees the
    controller's answer: the poll for it does not queue on that thread."""
    async def scenario() -> None:
        started = [await start_broker(zk_connect, b) for b in (1, 2, 3)]
        (first, events), (second, _), _third = started
        release = threading.Event()
        request = writes.request_controlled_shutdown

        def request_then_busy(client: KazooClient, broker_id: int) -> None:
            request(client, broker_id)
            second._worker.submit(release.wait, 30)  # the thread is busy from now on

        monkeypatch.setattr(writes, "request_controlled_shutdown", request_then_busy)
        try:
            await events.until(lambda: set(events.brokers) == {1, 2, 3})
            await first.create_topic("t", REPLICAS, {}, uuid.uuid4())
            await events.until(lambda: len(getattr(events.topics.get("t"), "states", {})) == 6)
            assert await second.controlled_shutdown(10.0)
            states = [read_state(zk, "t", p) for p in range(6)]
            assert all(s.leader != 2 and 2 not in s.isr for s in states)
        finally:
            release.set()
            for coordinator, _ in started:
                await coordinator.close()

    asyncio.run(scenario())


def test_preferred_election_on_request_and_periodically(zk_connect: str,
                                                        zk: KazooClient) -> None:
    async def scenario() -> None:
        first, events = await start_broker(zk_connect, 1)
        second, _ = await start_broker(zk_connect, 2)
        try:
            await events.until(lambda: set(events.brokers) == {1, 2})
            await first.create_topic("t", {0: (1, 2), 1: (1, 2)}, {}, uuid.uuid4())
            await events.until(lambda: len(getattr(events.topics.get("t"), "states", {})) == 2)
            for p in (0, 1):  # leadership moved away, as after a failover
                state = read_state(zk, "t", p)
                zk.set(znodes.partition_state_path("t", p), znodes.PartitionState(
                    2, 1, (2, 1), state.controller_epoch).encode())
            # The controller must have read the move first: until then the events still show
            # the first leader, and the wait below would pass before any election.
            await events.until(lambda: all(events.topic("t").states[p].leader == 2
                                           for p in (0, 1)))

            write_admin(zk, znodes.PREFERRED_ELECTION, [{"topic": "t", "partition": 0}])
            await events.until(lambda: events.topic("t").states[0].leader == 1)
            assert read_state(zk, "t", 0).leader_epoch == 2
            assert read_state(zk, "t", 1).leader == 2
            # The node's removal posts no event (the controller's own write of the state
            # already did), so it is polled in ZooKeeper.
            await asyncio.to_thread(wait_until, lambda: zk.exists(znodes.PREFERRED_ELECTION)
                                    is None, 5, "the election request's removal")

            await first.close()  # broker 2 takes over, with a periodic rebalance
            await second.close()
            second, second_events = await start_broker(zk_connect, 2,
                                                       leader_rebalance_interval_s=0.2)
            first, _ = await start_broker(zk_connect, 1)
            await second_events.until(lambda: second_events.controller == 2
                                      and set(second_events.brokers) == {1, 2})
            state = read_state(zk, "t", 1)  # broker 1 was dropped while down; caught up again
            assert (state.leader, state.isr) == (2, (2,))
            assert await second.update_isr("t", 1, state.leader_epoch, (2, 1),
                                           state.zk_version) is not None
            await second_events.until(
                lambda: getattr(second_events.topics.get("t"), "states", {}).get(1) is not None
                and second_events.topic("t").states[1].leader == 1, timeout=5)
        finally:
            await first.close()
            await second.close()

    asyncio.run(scenario())


def test_reassignment_walks_its_steps(zk_connect: str, zk: KazooClient) -> None:
    async def scenario() -> None:
        started = [await start_broker(zk_connect, b) for b in (1, 2, 3)]
        leader, events = started[0]
        try:
            await events.until(lambda: set(events.brokers) == {1, 2, 3})
            await leader.create_topic("t", {0: (1, 2), 1: (2, 1)}, {}, uuid.uuid4())
            await events.until(lambda: len(getattr(events.topics.get("t"), "states", {})) == 2)

            write_admin(zk, znodes.REASSIGN_PARTITIONS, [
                {"topic": "t", "partition": 0, "replicas": [3, 2]},
                {"topic": "t", "partition": 1, "replicas": [1, 2]}])  # a reordering
            await events.until(lambda: bool(events.topic("t").adding_replicas))
            metadata = events.topic("t")
            assert metadata.replicas == {0: (3, 2, 1), 1: (1, 2)}
            assert (metadata.adding_replicas, metadata.removing_replicas) == ({0: (3,)},
                                                                              {0: (1,)})
            pending = znodes.decode_partition_requests(zk.get(znodes.REASSIGN_PARTITIONS)[0])
            assert [r.partition for r in pending] == [0]  # the reordering is done

            state = read_state(zk, "t", 0)  # the new replica caught up: the leader says so
            assert await leader.update_isr("t", 0, state.leader_epoch, (1, 2, 3),
                                           state.zk_version) is not None
            await events.until(lambda: not events.topic("t").adding_replicas)
            assert events.topic("t").replicas == {0: (3, 2), 1: (1, 2)}
            final = read_state(zk, "t", 0)
            assert (final.leader, final.isr, final.leader_epoch) == (3, (2, 3),
                                                                    state.leader_epoch + 1)
            assert zk.exists(znodes.REASSIGN_PARTITIONS) is None
            topic = json.loads(zk.get(znodes.topic_path("t"))[0])
            assert topic["adding_replicas"] == {} and topic["removing_replicas"] == {}
        finally:
            for coordinator, _ in started:
                await coordinator.close()

    asyncio.run(scenario())


def test_dynamic_broker_config_default_then_own_override(zk_connect: str,
                                                         zk: KazooClient) -> None:
    async def scenario() -> None:
        broker, events = await start_broker(zk_connect, 1)
        try:
            await events.until(lambda: events.broker_config == {})
            rate = "follower.replication.throttled.rate"
            zk.create(znodes.broker_config_path("<default>"),
                      znodes.encode_topic_config({rate: "1000"}), makepath=True)
            await events.until(lambda: events.broker_config == {rate: "1000"})
            zk.create(znodes.broker_config_path("1"), znodes.encode_topic_config({rate: "5"}))
            await events.until(lambda: events.broker_config == {rate: "5"})
        finally:
            await broker.close()

    asyncio.run(scenario())


def test_a_burst_of_state_changes_is_read_per_partition_and_posted_once(
        zk_connect: str, zk: KazooClient) -> None:
    """The coordinator's worker is held while the burst's watch events arrive, so the test
    does not depend on how fast this machine delivers them: every event must mark its
    partition dirty, and the one flush that follows must post the topic once."""
    async def scenario() -> None:
        broker, events = await start_broker(zk_connect, 1)
        gate = threading.Event()
        try:
            count = 300
            await broker.create_topic("t", {p: (1,) for p in range(count)}, {}, uuid.uuid4())
            await events.until(
                lambda: len(getattr(events.topics.get("t"), "states", {})) == count)
            await broker.barrier()
            broker._worker.submit(gate.wait)
            posts = events.topic_posts
            results = [zk.set_async(znodes.partition_state_path("t", p), znodes.PartitionState(
                1, 5, (1,), 1).encode()) for p in range(count)]
            for result in results:
                result.get()
            await asyncio.to_thread(wait_until, lambda: len(broker._dirty.marked("t")) == count,
                                    30, "every state change marked dirty")
            gate.set()
            await events.until(lambda: all(
                s.leader_epoch == 5 for s in events.topic("t").states.values()))
            assert events.topic_posts - posts == 1
        finally:
            gate.set()
            await broker.close()

    asyncio.run(scenario())
