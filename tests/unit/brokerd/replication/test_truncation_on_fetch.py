"""Truncation on fetch (Fetch v12 ``last_fetched_epoch`` / ``diverging_epoch``) end to end
in-process: a real ReplicaFetcher with a tail its new leader never had, against the real
Fetch handler of that leader; and a consumer's diverging fetch answered without waiting."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from brokerd.replication.fetcher import FetchSettings, ReplicaFetcher
from brokerd.replication.partition import Partition
from brokerd.replication.throttle import ByteRateLimit
from brokerd.storage import LogConfig, LogManager
from tests.unit.brokerd.replication.test_fetcher import batch
from tests.unit.brokerd.replication.test_follower_sessions import InProcessLeader
from tests.unit.brokerd.server.test_fetch_session_handlers import _Broker, answered, body, send


def leader_with_history(tmp_path: Path) -> tuple[_Broker, Partition]:
    """A leader in epoch 3 whose log holds 0-4 from epoch 1 and 5-8 of its own."""
    broker = _Broker(tmp_path)
    broker.replicas.log_manager.get_or_create("t", 0, LogConfig()).append_as_leader(batch(5), 1)
    led = broker.replicas.become_leader("t", 0, uuid.uuid4(), 3, LogConfig(), (1, 2), (1, 2), 0)
    led.append_as_leader(batch(4))
    return broker, led


def test_a_divergent_follower_truncates_on_fetch_and_never_counts_at_its_old_tail(
        tmp_path: Path) -> None:
    async def scenario() -> tuple[list[int], list[int], Partition, Partition]:
        broker, led = leader_with_history(tmp_path / "leader")
        log = LogManager([tmp_path / "follower"], LogConfig()).get_or_create(
            "t", 0, LogConfig())
        log.append_as_leader(batch(5), 1)
        log.append_as_leader(batch(3), 2)  # 5-7: an epoch the leader never wrote
        follower = Partition("t", 0, uuid.uuid4(), log, broker_id=2)
        follower.become_follower(1, 3, (1, 2), (1, 2), 0)
        fetcher = ReplicaFetcher(1, FetchSettings(2, wait_max_ms=1), lambda _: None,
                                 ByteRateLimit())
        fetcher.add(follower, throttled=False)
        assert fetcher._task is not None
        fetcher._task.cancel()  # the rounds are driven here, through the real handler
        leader = InProcessLeader(broker)
        high_watermarks, follower_ends = [], []
        for _ in range(3):
            await fetcher._truncate(leader)  # type: ignore[arg-type]
            await fetcher._fetch(leader)  # type: ignore[arg-type]
            high_watermarks.append(led.high_watermark)
            follower_ends.append(follower.log_end_offset)
        return high_watermarks, follower_ends, led, follower

    high_watermarks, follower_ends, led, follower = asyncio.run(scenario())
    # Round 1 asks from 8 in epoch 2 and is told (1, 5): counting that fetch would have
    # committed the leader's 5-7 against a follower holding other records there.
    assert follower_ends == [5, 9, 9]
    assert high_watermarks == [0, 5, 9]
    assert follower.log.leader_epoch_cache.entries == led.log.leader_epoch_cache.entries
    assert follower.log.read(0, 1 << 20).read() == led.log.read(0, 1 << 20).read()


def test_an_epoch_led_without_a_write_is_dropped_and_the_follower_goes_on(
        tmp_path: Path) -> None:
    """The replica led epoch 2 without writing in it (its epoch cache says epoch 2 starts
    at its log end); the new leader of epoch 3 never heard of epoch 2."""
    async def scenario() -> tuple[list[int], Partition, Partition]:
        broker = _Broker(tmp_path / "leader")
        broker.replicas.log_manager.get_or_create("t", 0, LogConfig()).append_as_leader(
            batch(5), 1)
        led = broker.replicas.become_leader("t", 0, uuid.uuid4(), 3, LogConfig(), (1, 2),
                                            (1, 2), 0)
        led.append_as_leader(batch(2))
        log = LogManager([tmp_path / "follower"], LogConfig()).get_or_create(
            "t", 0, LogConfig())
        log.append_as_leader(batch(5), 1)
        replica = Partition("t", 0, uuid.uuid4(), log, broker_id=2)
        replica.become_leader(2, (1, 2), (1, 2), 0, 0)
        replica.become_follower(1, 3, (1, 2), (1, 2), 0)
        fetcher = ReplicaFetcher(1, FetchSettings(2, wait_max_ms=1), lambda _: None,
                                 ByteRateLimit())
        fetcher.add(replica, throttled=False)
        assert fetcher._task is not None
        fetcher._task.cancel()
        leader = InProcessLeader(broker)
        ends = []
        for _ in range(3):
            await fetcher._fetch(leader)  # type: ignore[arg-type]
            ends.append(replica.log_end_offset)
        return ends, led, replica

    ends, led, replica = asyncio.run(scenario())
    assert ends == [5, 7, 7]  # told (1, 5): nothing to cut but epoch 2, then the records
    assert replica.log.leader_epoch_cache.entries == led.log.leader_epoch_cache.entries


def test_a_consumers_diverging_fetch_is_answered_at_once_without_records(
        tmp_path: Path) -> None:
    async def scenario() -> dict[str, object]:
        broker, _ = leader_with_history(tmp_path)
        request = body(0, -1, {0: 7}, max_wait_ms=60_000)
        request["topics"][0]["partitions"][0]["last_fetched_epoch"] = 2  # never written here
        response = await asyncio.wait_for(send(broker, request), 20)  # a hang guard only
        return dict(answered(response)[0])

    answer = asyncio.run(scenario())
    assert answer["diverging_epoch"] == {"epoch": 1, "end_offset": 5}
    assert answer["error_code"] == 0 and not answer["records"]
