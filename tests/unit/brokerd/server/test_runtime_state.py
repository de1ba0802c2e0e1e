"""MetadataCache waiting/queries and the producer-id allocator."""

from __future__ import annotations

import asyncio
import uuid

from brokerd.coordination.znodes import BrokerRegistration, PartitionState, ProducerIdBlock, TopicMetadata
from brokerd.server.metadata_cache import MetadataCache
from brokerd.server.producer_ids import ProducerIdAllocator


def topic(name: str, leaders: dict[int, int]) -> TopicMetadata:
    return TopicMetadata(name, uuid.uuid4(), {p: (leader,) for p, leader in leaders.items()},
                         {p: PartitionState(leader, 0, (leader,)) for p, leader in leaders.items()})


def test_wait_until_wakes_on_update_and_times_out() -> None:
    async def scenario() -> tuple[bool, bool]:
        cache = MetadataCache(broker_id=1)
        loop = asyncio.get_running_loop()
        loop.call_later(0.02, cache.put_topic, "t", topic("t", {0: 1}))
        arrived = await cache.wait_until(lambda: cache.has_leaders("t"), timeout=2)
        missing = await cache.wait_until(lambda: cache.topic("never") is not None, timeout=0.05)
        return arrived, missing

    assert asyncio.run(scenario()) == (True, False)


def test_leaders_must_be_alive_and_controller_defaults_to_self() -> None:
    cache = MetadataCache(broker_id=1)
    cache.put_topic("t", topic("t", {0: 1, 1: 2}))
    assert not cache.has_leaders("t")  # broker 2 is not registered
    cache.put_brokers({2: BrokerRegistration(2, "h", 1)})
    assert cache.has_leaders("t")
    assert cache.effective_controller() == 1
    cache.put_controller(2)
    assert cache.effective_controller() == 2
    metadata = cache.topic("t")
    assert metadata is not None and cache.topic_by_id(metadata.topic_id) is metadata
    cache.put_topic("t", None)
    assert cache.topic("t") is None


def test_derived_values_are_computed_again_only_when_their_basis_changes() -> None:
    cache = MetadataCache(broker_id=1)
    calls: list[tuple[int, frozenset[int], frozenset[int]]] = []
    previous: list[list[int] | None] = []

    def leaders(metadata: TopicMetadata, announced: frozenset[int], live: frozenset[int],
                last: list[int] | None) -> list[int]:
        calls.append((len(metadata.replicas), announced, live))
        previous.append(last)
        return [metadata.states[p].leader for p in sorted(announced)]

    first = topic("t", {0: 1, 1: 2})
    cache.put_topic("t", first)
    assert cache.derived(first, leaders) == [1, 2]
    assert cache.derived(first, leaders) == [1, 2]
    assert calls == [(2, frozenset({0, 1}), frozenset({1}))]
    cache.put_brokers({2: BrokerRegistration(2, "h", 1)})  # the live brokers changed
    cache.derived(first, leaders)
    assert calls[-1] == (2, frozenset({0, 1}), frozenset({1, 2}))
    moved = topic("t", {0: 2, 1: 2})  # a new state of the topic
    cache.put_topic("t", moved)
    assert cache.derived(moved, leaders) == [2, 2]
    assert len(calls) == 3
    assert previous == [None, [1, 2], [1, 2]]  # each computation sees the one before
    cache.put_topic("t", None)  # deleted: nothing of it is kept
    cache.put_topic("t", moved)
    cache.derived(moved, leaders)
    assert len(calls) == 4
    assert previous[-1] is None


def test_producer_ids_are_handed_out_per_block() -> None:
    blocks = iter([ProducerIdBlock(1, 0, 2), ProducerIdBlock(1, 10, 11)])
    claims = []

    async def claim() -> ProducerIdBlock:
        block = next(blocks)
        claims.append(block)
        return block

    async def scenario() -> list[int]:
        allocator = ProducerIdAllocator(claim)
        return list(await asyncio.gather(*(allocator.next_id() for _ in range(5))))

    assert asyncio.run(scenario()) == [0, 1, 2, 10, 11]
    assert len(claims) == 2
