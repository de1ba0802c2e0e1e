"""The follower's fetch session (KIP-227): what each request names and forgets, and a
real ReplicaFetcher replicating through the real Fetch handler in-process: incremental
requests naming only what changed, idle rounds naming nothing while the follower stays in
the ISR, and a refused session replaced by a full fetch."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

from brokerd.protocol import ApiKey, ErrorCode, RequestHeader
from brokerd.replication.fetcher import FetchSettings, FollowerSession, ReplicaFetcher, _Fetching
from brokerd.replication.partition import Partition
from brokerd.replication.throttle import ByteRateLimit
from brokerd.server.handlers import fetch
from brokerd.server.request import Request
from brokerd.server.transfer import RegionList
from brokerd.storage import LogConfig, LogManager
from tests.unit.brokerd.server.test_fetch_session_handlers import _Broker, append


def fields(offset: int) -> dict[str, Any]:
    return {"current_leader_epoch": 3, "fetch_offset": offset, "last_fetched_epoch": -1,
            "log_start_offset": 0, "partition_max_bytes": 100}


def test_a_session_names_only_changes_and_forgets_what_left() -> None:
    session = FollowerSession()
    everything = {("t", 0): fields(0), ("t", 1): fields(0)}
    assert session.request(everything, []) == (everything, [])  # no session yet: full
    assert session.answered({"error_code": 0, "session_id": 42}, everything, [])
    assert (session.session_id, session.epoch) == (42, 1)
    now = {("t", 0): fields(5), ("u", 0): fields(0)}
    changed = [("t", 0), ("t", 1), ("u", 0)]
    named, forgotten = session.request(now, changed)
    assert (named, forgotten) == (now, [("t", 1)])
    assert session.answered({"error_code": 0, "session_id": 42}, named, forgotten)
    assert session.request(now, changed) == ({}, [])  # nothing new since it was told
    assert session.epoch == 2


def test_a_refused_or_absent_session_falls_back_to_full_fetches() -> None:
    session = FollowerSession()
    everything = {("t", 0): fields(0)}
    session.answered({"error_code": 0, "session_id": 42}, everything, [])
    refused = {"error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND, "session_id": 0}
    assert not session.answered(refused, {}, [])
    assert (session.session_id, session.epoch) == (42, 0)  # full, closing 42
    assert session.request(everything, []) == (everything, [])
    session.answered({"error_code": 0, "session_id": 0}, everything, [])  # cache full
    assert (session.session_id, session.epoch) == (0, 0)


class InProcessLeader:
    """An inter-broker connection answered by the real Fetch handler of ``broker``."""

    def __init__(self, broker: _Broker) -> None:
        self.broker = broker
        self.bodies: list[dict[str, Any]] = []

    async def request(self, api_key: int, version: int, body: dict[str, Any],
                      extra_wait_s: float = 0.0, codec: Any = None) -> dict[str, Any]:
        assert api_key == ApiKey.FETCH
        self.bodies.append(body)
        request = Request(RequestHeader(api_key, version, 1, "f"), body, None)  # type: ignore[arg-type]
        response: dict[str, Any] = dict(await fetch.handle(self.broker, request))  # type: ignore[arg-type]
        for topic in response["responses"]:
            for answer in topic["partitions"]:
                if isinstance(answer["records"], RegionList):
                    answer["records"] = b"".join(r.read() for r in answer["records"].regions)
        return response


def followers(tmp_path: Path, count: int) -> list[Partition]:
    manager = LogManager([tmp_path], LogConfig())
    partitions = []
    for index in range(count):
        partition = Partition("t", index, uuid.uuid4(), manager.get_or_create(
            "t", index, LogConfig()), broker_id=2)
        partition.become_follower(1, 3, (1, 2), (1, 2), 0)
        partitions.append(partition)
    return partitions


async def session_started(broker: _Broker, leader: InProcessLeader, tmp_path: Path,
                          count: int) -> tuple[ReplicaFetcher, list[Partition]]:
    """A follower fetcher of ``count`` partitions after its truncation and its first
    (full, session-creating) fetch from ``leader``."""
    replicas = followers(tmp_path / "follower", count)
    fetcher = ReplicaFetcher(1, FetchSettings(2, wait_max_ms=1), lambda _: None,
                             ByteRateLimit())
    for partition in replicas:
        fetcher.partitions[("t", partition.index)] = _Fetching(partition, 3)
    await fetcher._truncate(leader)  # type: ignore[arg-type]
    await fetcher._fetch(leader)  # type: ignore[arg-type]
    return fetcher, replicas


def named(body: dict[str, Any]) -> list[int]:
    return [p["partition"] for t in body["topics"] for p in t["partitions"]]


def test_a_follower_replicates_through_incremental_fetches_and_stays_in_sync(
        tmp_path: Path) -> None:
    async def scenario() -> tuple[InProcessLeader, list[Partition], list[Partition],
                                  tuple[int, ...] | None]:
        broker = _Broker(tmp_path / "leader")
        led = broker.lead(4, isr=(1, 2))
        leader = InProcessLeader(broker)
        fetcher, replicas = await session_started(broker, leader, tmp_path, 4)
        append(led[2], 3)
        for _ in range(3):  # data, then the follower's new offset, then idle
            await fetcher._fetch(leader)  # type: ignore[arg-type]
        for _ in range(40):  # idle for 40 s of the leader's clock
            broker.now += 1_000
            await fetcher._fetch(leader)  # type: ignore[arg-type]
        return leader, led, replicas, led[0].begin_isr_change(broker.now, 30_000)

    leader, led, replicas, isr_change = asyncio.run(scenario())
    bodies = leader.bodies
    assert [(b["session_id"] != 0, b["session_epoch"]) for b in bodies[:4]] == [
        (False, 0), (True, 1), (True, 2), (True, 3)]
    assert [sorted(named(b)) for b in bodies[:4]] == [[0, 1, 2, 3], [], [2], []]
    assert all(named(b) == [] for b in bodies[4:])
    assert [p.log_end_offset for p in replicas] == [0, 0, 3, 0]
    assert replicas[2].high_watermark == 3 and led[2].high_watermark == 3
    assert isr_change is None  # idle and caught up: kept in the ISR


def test_a_refused_session_is_replaced_by_a_full_fetch(tmp_path: Path) -> None:
    async def scenario() -> tuple[list[dict[str, Any]], int]:
        broker = _Broker(tmp_path / "leader")
        led = broker.lead(2, isr=(1, 2))
        leader = InProcessLeader(broker)
        fetcher, replicas = await session_started(broker, leader, tmp_path, 2)
        broker.fetch_sessions.remove(fetcher.session.session_id)  # evicted on the leader
        append(led[1], 2)
        for _ in range(3):  # refused (70), full again, then incremental
            await fetcher._fetch(leader)  # type: ignore[arg-type]
        return leader.bodies, replicas[1].log_end_offset

    bodies, log_end = asyncio.run(scenario())
    first = bodies[1]["session_id"]
    assert [(b["session_id"], b["session_epoch"]) for b in bodies] == [
        (0, 0), (first, 1), (first, 0), (bodies[3]["session_id"], 1)]
    assert sorted(named(bodies[2])) == [0, 1] and bodies[3]["session_id"] not in (0, first)
    assert log_end == 2


def test_a_parked_partition_leaves_the_session_and_rejoins_when_it_may_fetch(
        tmp_path: Path) -> None:
    async def scenario() -> list[dict[str, Any]]:
        broker = _Broker(tmp_path / "leader")
        broker.lead(2, isr=(1, 2))
        leader = InProcessLeader(broker)
        fetcher, _ = await session_started(broker, leader, tmp_path, 2)
        parked = fetcher.partitions[("t", 1)]
        fetcher._park(("t", 1), parked, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        await fetcher._fetch(leader)  # type: ignore[arg-type]
        await fetcher._fetch(leader)  # type: ignore[arg-type]
        await asyncio.sleep(parked.parked_until - time.monotonic() + 0.01)  # back-off over
        await fetcher._fetch(leader)  # type: ignore[arg-type]
        return leader.bodies

    bodies = asyncio.run(scenario())
    forgotten = [[p for t in b["forgotten_topics_data"] for p in t["partitions"]]
                 for b in bodies]
    assert forgotten == [[], [1], [], []]
    assert [sorted(named(b)) for b in bodies] == [[0, 1], [], [], [1]]
