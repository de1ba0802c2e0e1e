"""A broker that restarts within its old session replaces its registration at once; the
other brokers must still see it (it was once left out of every ISR for good), and the
controller treats the bounce as Kafka does: a failure, then a start-up."""

from __future__ import annotations

import asyncio

from kazoo.client import KazooClient

from brokerd.coordination import znodes
from tests.integration.coordination.harness import Events, read_state
from tests.integration.coordination.test_failover import (
    REPLICAS,
    all_states,
    start_three_with_topic,
)


def _replace_registration(zk: KazooClient, broker_id: int) -> int:
    """Delete and re-create ``broker_id``'s registration in one transaction (owned by
    ``zk``'s session, as a restarted broker's would be): the names under /brokers/ids
    never change.  Returns the new broker epoch (czxid)."""
    path = znodes.broker_path(broker_id)
    data, _ = zk.get(path)
    transaction = zk.transaction()
    transaction.delete(path)
    transaction.create(path, data, ephemeral=True)
    assert all(result is not None and not isinstance(result, Exception)
               for result in transaction.commit())
    return int(zk.exists(path).czxid)


async def _until_registered(events: Events, broker_id: int) -> None:
    await events.until(lambda: broker_id in events.brokers)


def test_a_bounced_broker_loses_its_leaderships_and_stays_registered(
        zk_connect: str, zk: KazooClient) -> None:
    async def scenario() -> None:
        started = await start_three_with_topic(zk_connect)
        _, events = started[0]
        try:
            before = all_states(zk)
            led_by_3 = [p for p, state in before.items() if state.leader == 3]
            assert led_by_3

            await asyncio.to_thread(_replace_registration, zk, 3)
            await events.until(lambda: all(
                3 not in state.isr for state in events.topic("t").states.values()),
                timeout=10)
            after = all_states(zk)
            for p, old in before.items():
                new = after[p]
                assert 3 not in new.isr  # it rejoins by fetching, as after any restart
                if p in led_by_3:
                    assert new.leader_epoch == old.leader_epoch + 1
                    assert new.leader == next(b for b in REPLICAS[p] if b in old.isr and b != 3)
            # Every broker still counts it live (the old ChildrenWatch saw no change).
            for _, broker_events in started:
                await _until_registered(broker_events, 3)
            assert read_state(zk, "t", led_by_3[0]).leader != 3
        finally:
            for coordinator, _ in started:
                await coordinator.close()

    asyncio.run(scenario())
