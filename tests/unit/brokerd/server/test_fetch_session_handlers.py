"""Fetch sessions (KIP-227) in the Fetch handler, against a real ReplicaManager on
temporary logs, no sockets: session metadata errors, incremental requests and responses,
idle partitions left unread, long polls woken through the session, role changes,
follower sessions keeping idle caught-up followers in the ISR, and listener clean-up."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from brokerd.protocol import ErrorCode, RequestHeader, bodies
from brokerd.protocol.records import build_batch
from brokerd.replication.fetch_sessions import FetchSessionCache
from brokerd.replication.manager import ReplicaManager
from brokerd.replication.partition import Partition
from brokerd.server.handlers import fetch
from brokerd.server.quotas import BrokerQuotaGlue
from brokerd.server.request import Request
from brokerd.server.transfer import RegionList
from brokerd.storage import Log, LogConfig, LogManager


class _Broker:
    """The parts of Broker the Fetch handler touches, over a real ReplicaManager."""

    def __init__(self, tmp_path: Path, slots: int = 10) -> None:
        self.now = 1_000
        self.replicas = ReplicaManager(1, LogManager([tmp_path], LogConfig()),
                                       lag_time_max_ms=30_000, clock_ms=lambda: self.now)
        self.fetch_sessions = FetchSessionCache(slots, 120_000)
        self.quotas = BrokerQuotaGlue()
        self.shutting_down = asyncio.Event()
        self.probe = SimpleNamespace(bytes_out=lambda *args: None)
        self.metering = SimpleNamespace(fetched=lambda *args: None)

    def leader_partition(self, topic: str, index: int, current_leader_epoch: int = -1
                         ) -> tuple[Partition | None, ErrorCode]:
        hosted = self.replicas.leader(topic, index)
        return hosted, ErrorCode.NONE if hosted else ErrorCode.NOT_LEADER_OR_FOLLOWER

    def lead(self, partitions: int, isr: tuple[int, ...] = (1,)) -> list[Partition]:
        return [self.replicas.become_leader("t", index, uuid.uuid4(), 3, LogConfig(), isr,
                                            (1, 2), 0) for index in range(partitions)]


def append(partition: Partition, count: int = 1) -> None:
    partition.append_as_leader(memoryview(build_batch(
        [(None, b"v", [], 1_700_000_000_000)] * count)))


def body(session_id: int, epoch: int, offsets: dict[int, int], replica_id: int = -1,
         forgotten: tuple[int, ...] = (), max_wait_ms: int = 0) -> dict[str, Any]:
    return {"replica_id": replica_id, "max_wait_ms": max_wait_ms, "min_bytes": 1,
            "max_bytes": 1 << 20, "isolation_level": 0, "session_id": session_id,
            "session_epoch": epoch, "rack_id": "",
            "topics": [{"topic": "t", "partitions": [
                {"partition": index, "current_leader_epoch": -1, "fetch_offset": offset,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}
                for index, offset in offsets.items()]}] if offsets else [],
            "forgotten_topics_data": [{"topic": "t", "partitions": list(forgotten)}]
            if forgotten else []}


async def send(broker: _Broker, request_body: dict[str, Any], version: int = 12
               ) -> bodies.FetchResponse:
    connection = SimpleNamespace(principal=None, mute_for=lambda s: None,
                                 close=lambda r: None, listener_name="PLAINTEXT")
    request = Request(RequestHeader(1, version, 1, "c"), request_body, connection)  # type: ignore[arg-type]
    return await fetch.handle(broker, request)  # type: ignore[arg-type]


def answered(response: bodies.FetchResponse) -> dict[int, bodies.FetchResponsePartition]:
    return {p["partition_index"]: p for t in response["responses"] for p in t["partitions"]}


def test_session_metadata_errors_and_closing(tmp_path: Path) -> None:
    async def scenario() -> list[tuple[int, int, int]]:
        broker = _Broker(tmp_path)
        broker.lead(2)
        full = await send(broker, body(0, 0, {0: 0, 1: 0}))
        sid = full["session_id"]
        results = [(full["error_code"], int(sid != 0), len(answered(full)))]
        for request in (body(sid, 2, {}), body(sid + 1, 1, {}), body(0, 3, {}),
                        body(sid, 1, {}), body(sid, 1, {})):
            response = await send(broker, request)
            results.append((response["error_code"], response["session_id"],
                            len(response["responses"])))
        closing = await send(broker, body(sid, -1, {0: 0}))  # FINAL: sessionless, closes
        results.append((closing["error_code"], closing["session_id"], len(answered(closing))))
        gone = await send(broker, body(sid, 2, {}))
        results.append((gone["error_code"], gone["session_id"], len(gone["responses"])))
        return [r if r[1] in (0, 1) else (r[0], -9, r[2]) for r in results]

    assert asyncio.run(scenario()) == [
        (0, 1, 2),
        (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, 0),  # the session expects epoch 1
        (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, 0),
        (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, 0),  # id 0 with a positive epoch
        (0, -9, 0),  # epoch 1 accepted: nothing changed, nothing answered
        (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, 0),  # epoch 1 again: now 2 is expected
        (0, 0, 1),
        (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, 0)]


def test_incremental_answers_only_what_changed_without_reading_idle_partitions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    real_read = Log.read

    def counting_read(self: Log, *args: Any, **kwargs: Any) -> Any:
        reads.append(1)
        return real_read(self, *args, **kwargs)

    async def scenario() -> tuple[int, dict[int, bodies.FetchResponsePartition],
                                  dict[int, bodies.FetchResponsePartition],
                                  dict[int, bodies.FetchResponsePartition]]:
        broker = _Broker(tmp_path)
        partitions = broker.lead(50)
        sid = (await send(broker, body(0, 0, dict.fromkeys(range(50), 0))))["session_id"]
        monkeypatch.setattr(Log, "read", counting_read)
        idle = answered(await send(broker, body(sid, 1, {})))
        idle_reads = len(reads)
        append(partitions[7], 2)
        news = answered(await send(broker, body(sid, 2, {})))
        # The consumer advances partition 7 and forgets partition 9.
        after = answered(await send(broker, body(sid, 3, {7: 2}, forgotten=(9,))))
        return idle_reads, idle, news, after

    idle_reads, idle, news, after = asyncio.run(scenario())
    assert (idle_reads, idle) == (0, {})
    assert list(news) == [7] and news[7]["high_watermark"] == 2
    assert cast(RegionList, news[7]["records"]).nbytes > 0
    assert after == {}  # 7 is read up to date: nothing new to say


def test_a_parked_incremental_fetch_wakes_on_the_session_and_reports_role_changes(
        tmp_path: Path) -> None:
    async def scenario() -> tuple[dict[int, bodies.FetchResponsePartition],
                                  dict[int, bodies.FetchResponsePartition]]:
        # Fetch v10: a consumer that may read only from leaders (v11+ may read from
        # followers, KIP-392, so a leader becoming a follower is no error for it).
        broker = _Broker(tmp_path)
        partitions = broker.lead(3)
        sid = (await send(broker, body(0, 0, {0: 0, 1: 0, 2: 0}), 10))["session_id"]
        parked = asyncio.ensure_future(send(broker, body(sid, 1, {}, max_wait_ms=5_000), 10))
        await asyncio.sleep(0.01)
        assert not parked.done()
        append(partitions[1])
        woken = answered(await asyncio.wait_for(parked, 1))
        broker.replicas.become_follower("t", 2, partitions[2].topic_id, 2, 4, LogConfig(),
                                        (2,), (1, 2), 1)
        moved = answered(await send(broker, body(sid, 2, {1: 1}), 10))
        return woken, moved

    woken, moved = asyncio.run(scenario())
    assert list(woken) == [1] and cast(RegionList, woken[1]["records"]).nbytes > 0
    assert list(moved) == [2] and moved[2]["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_full_cache_answers_without_a_session(tmp_path: Path) -> None:
    async def scenario() -> list[int]:
        broker = _Broker(tmp_path, slots=1)
        broker.lead(1)
        first = await send(broker, body(0, 0, {0: 0}))
        second = await send(broker, body(0, 0, {0: 0}))
        return [int(first["session_id"] != 0), second["session_id"], len(answered(second))]

    assert asyncio.run(scenario()) == [1, 0, 1]


def test_an_idle_caught_up_follower_stays_in_the_isr_and_a_silent_one_leaves(
        tmp_path: Path) -> None:
    async def scenario() -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
        broker = _Broker(tmp_path)
        partitions = broker.lead(2, isr=(1, 2))
        for partition in partitions:
            append(partition, 3)
        full = await send(broker, body(0, 0, {0: 3, 1: 3}, replica_id=2))
        sid = full["session_id"]
        epoch = 1
        for _ in range(40):  # a follower naming nothing, every second for 40 s
            broker.now += 1_000
            response = await send(broker, body(sid, epoch, {}, replica_id=2))
            assert response["error_code"] == 0
            epoch += 1
        kept = partitions[0].begin_isr_change(broker.now, 30_000)
        broker.now += 31_000  # the follower died: its session fetches stop
        shrunk = partitions[0].begin_isr_change(broker.now, 30_000)
        return kept, shrunk

    kept, shrunk = asyncio.run(scenario())
    assert (kept, shrunk) == (None, (1,))


def test_closing_or_evicting_a_session_releases_its_listeners(tmp_path: Path) -> None:
    def listening(partition: Partition) -> int:
        return sum(len(event._callbacks) for event in (
            partition.appended, partition.high_watermark_advanced, partition.role_changed))

    async def scenario() -> list[list[int]]:
        broker = _Broker(tmp_path, slots=1)
        partitions = broker.lead(2)
        counts = []
        sid = (await send(broker, body(0, 0, {0: 0, 1: 0}, replica_id=2)))["session_id"]
        counts.append([listening(p) for p in partitions])
        await send(broker, body(sid, 1, {}, replica_id=2, forgotten=(1,)))
        counts.append([listening(p) for p in partitions])
        broker.now += 121_000  # stale: the next session takes its slot
        await send(broker, body(0, 0, {1: 0}))
        counts.append([listening(p) for p in partitions] + [
            len(p.session_fetches) for p in partitions])
        return counts

    assert asyncio.run(scenario()) == [[3, 3], [3, 0], [0, 2, 0, 0]]
