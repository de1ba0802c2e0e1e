"""update_isr: the leader's conditional ISR write against real ZooKeeper."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from kazoo.client import KazooClient

from brokerd.coordination.zk_await import CoordinationUnavailableError
from tests.integration.coordination.harness import read_state, start_broker


def test_update_isr_writes_only_on_the_expected_version(zk_connect: str,
                                                        zk: KazooClient) -> None:
    async def scenario() -> None:
        leader, events = await start_broker(zk_connect, 1)
        follower, _ = await start_broker(zk_connect, 2)
        try:
            await events.until(lambda: set(events.brokers) == {1, 2})
            await leader.create_topic("t", {0: (1, 2)}, {}, uuid.uuid4())
            await events.until(lambda: bool(events.topics.get("t")
                                             and events.topic("t").states))
            before = read_state(zk, "t", 0)
            assert (before.leader, before.isr) == (1, (1, 2))

            after = await leader.update_isr("t", 0, before.leader_epoch, (1,),
                                            before.zk_version)
            assert after is not None
            assert (after.leader, after.isr, after.zk_version) == (1, (1,),
                                                                  before.zk_version + 1)
            assert after.controller_epoch == before.controller_epoch
            assert read_state(zk, "t", 0) == after
            await events.until(lambda: events.topic("t").states[0] == after)

            stale = await leader.update_isr("t", 0, before.leader_epoch, (1, 2),
                                            before.zk_version)
            assert stale is None
            assert read_state(zk, "t", 0).isr == (1,)
            assert await leader.update_isr("none", 0, 0, (1,), 0) is None
        finally:
            await follower.close()
            await leader.close()

    asyncio.run(scenario())


def test_concurrent_isr_updates_are_batched_and_each_conditional(zk_connect: str,
                                                                  zk: KazooClient) -> None:
    async def scenario() -> None:
        count = 1000
        leader, events = await start_broker(zk_connect, 1)
        follower, _ = await start_broker(zk_connect, 2)
        try:
            await events.until(lambda: set(events.brokers) == {1, 2})
            await leader.create_topic("t", {p: (1, 2) for p in range(count)}, {},
                                      uuid.uuid4())
            await events.until(
                lambda: len(getattr(events.topics.get("t"), "states", {})) == count,
                timeout=20)
            states = dict(events.topic("t").states)
            stale = 7  # its version moves on before the leader's write arrives
            zk.set(f"/brokers/topics/t/partitions/{stale}/state", states[stale].encode())

            started = time.monotonic()
            results = await asyncio.gather(*(
                leader.update_isr("t", p, s.leader_epoch, (1,), s.zk_version)
                for p, s in states.items()))
            print(f"\n{count} concurrent ISR writes in "
                  f"{(time.monotonic() - started) * 1000:.0f} ms")
            assert results[stale] is None
            written = [r for p, r in enumerate(results) if p != stale]
            assert all(r is not None and r.isr == (1,) for r in written)
            assert read_state(zk, "t", 3) == results[3]
        finally:
            await follower.close()
            await leader.close()

    asyncio.run(scenario())


def test_update_isr_after_close_fails_at_once(zk_connect: str) -> None:
    async def scenario() -> None:
        broker, _ = await start_broker(zk_connect, 1)
        await broker.close()
        with pytest.raises(CoordinationUnavailableError):
            await asyncio.wait_for(broker.update_isr("t", 0, 0, (1,), 0), 1.0)

    asyncio.run(scenario())
