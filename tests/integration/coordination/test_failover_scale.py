"""Failover at scale: 3 brokers, 3,000 partitions with RF 3, one broker leading 1,000 loses
its session; every lost leadership is re-elected in a new epoch.  Prints how long that
took (a figure; the wait is a hang guard, not a bound: ``bench/failover.py`` measures)."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from kazoo.client import KazooClient

from tests.integration.coordination.harness import start_broker

TOPICS = 3
PARTITIONS = 1000  # per topic


@pytest.mark.serial  # heavy: runs alone after the parallel suite
def test_3000_partition_failover_timing(zk_connect: str, zk: KazooClient) -> None:

    async def scenario() -> None:
        started = [await start_broker(zk_connect, b) for b in (1, 2, 3)]
        controller, events = started[0]
        try:
            await events.until(lambda: set(events.brokers) == {1, 2, 3})
            replicas = {p: tuple((p + r) % 3 + 1 for r in range(3)) for p in range(PARTITIONS)}
            names = [f"t{i}" for i in range(TOPICS)]
            created = time.monotonic()
            for name in names:
                await controller.create_topic(name, replicas, {}, uuid.uuid4())

            def states() -> list:  # type: ignore[type-arg]
                return [s for n in names if events.topics.get(n)
                        for s in events.topics[n].states.values()]  # type: ignore[union-attr]
            await events.until(lambda: len(states()) == TOPICS * PARTITIONS, timeout=60)
            print(f"\ncreated and read {TOPICS * PARTITIONS} partitions in "
                  f"{time.monotonic() - created:.1f} s")
            led = sum(1 for s in states() if s.leader == 2)
            assert led == TOPICS * sum(1 for r in replicas.values() if r[0] == 2)

            killed = time.monotonic()
            # Deregister and end the session on the coordinator's own thread: stopping kazoo
            # from another thread while a flush pipelines reads can block that flush forever
            # (kazoo's wake-up socket fills once its connection thread is gone).
            await started[1][0].close()
            await events.until(lambda: all(s.leader != 2 and 2 not in s.isr
                                           for s in states()), timeout=60)
            elapsed = time.monotonic() - killed
            print(f"{led} leaders lost; all re-elected and visible to broker 1 "
                  f"in {elapsed * 1000:.0f} ms")
            moved = [s for s in states() if s.leader_epoch > 0]
            assert len(moved) == led  # exactly the lost leaderships, each in a new epoch
        finally:
            for coordinator, _ in (started[0], started[2]):
                await coordinator.close()

    asyncio.run(scenario())
