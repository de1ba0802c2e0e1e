"""update_isr: the leader's conditional ISR write against real ZooKeeper."""

from __future__ import annotations

import asyncio
import uuid

from kazoo.client import KazooClient

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
                                             and events.topics["t"].states))
            before = read_state(zk, "t", 0)
            assert (before.leader, before.isr) == (1, (1, 2))

            after = await leader.update_isr("t", 0, before.leader_epoch, (1,),
                                            before.zk_version)
            assert after is not None
            assert (after.leader, after.isr, after.zk_version) == (1, (1,),
                                                                  before.zk_version + 1)
            assert after.controller_epoch == before.controller_epoch
            assert read_state(zk, "t", 0) == after
            await events.until(lambda: events.topics["t"].states[0] == after)

            stale = await leader.update_isr("t", 0, before.leader_epoch, (1, 2),
                                            before.zk_version)
            assert stale is None
            assert read_state(zk, "t", 0).isr == (1,)
            assert await leader.update_isr("none", 0, 0, (1,), 0) is None
        finally:
            await follower.close()
            await leader.close()

    asyncio.run(scenario())
