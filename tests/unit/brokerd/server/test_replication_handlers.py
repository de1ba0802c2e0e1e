"""Produce (acks=all purgatory), Fetch (leader side of follower fetches) and
OffsetForLeaderEpoch against a real ReplicaManager on temporary logs, no sockets."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from brokerd.protocol import ErrorCode, RequestHeader, bodies
from brokerd.protocol.records import build_batch
from brokerd.replication.manager import ReplicaManager
from brokerd.replication.partition import Partition
from brokerd.server.handlers import fetch, offset_for_leader_epoch, produce
from brokerd.server.quotas import BrokerQuotaGlue
from brokerd.server.request import Later, Request
from brokerd.storage import LogConfig, LogManager


class _Broker:
    """The parts of Broker the three handlers touch, over a real ReplicaManager."""

    def __init__(self, tmp_path: Path) -> None:
        self.replicas = ReplicaManager(1, LogManager([tmp_path], LogConfig()))
        self.quotas = BrokerQuotaGlue()
        self.cache = SimpleNamespace(partition_state=lambda topic, partition: None)
        self.shutting_down = asyncio.Event()
        self.probe = SimpleNamespace(bytes_in=lambda *args: None, bytes_out=lambda *args: None)
        self.metering = SimpleNamespace(produced=lambda *args: None, fetched=lambda *args: None)

    def leader_partition(self, topic: str, index: int, current_leader_epoch: int = -1
                         ) -> tuple[Partition | None, ErrorCode]:
        hosted = self.replicas.leader(topic, index)
        return hosted, ErrorCode.NONE if hosted else ErrorCode.NOT_LEADER_OR_FOLLOWER

    def lead(self, isr: tuple[int, ...], min_insync: int = 2) -> Partition:
        return self.replicas.become_leader("t", 0, uuid.uuid4(), 3,
                                           LogConfig(min_insync_replicas=min_insync), isr,
                                           (1, 2, 3), 0)


def _request(api_key: int, version: int, body: dict[str, Any]) -> Request:
    connection = SimpleNamespace(principal=None, mute_for=lambda s: None, close=lambda r: None)
    return Request(RequestHeader(api_key, version, 1, "c"), body, connection)  # type: ignore[arg-type]


def _produce_request(broker: _Broker, timeout_ms: int = 2000) -> Any:
    """The handler's own result: an acks=all request waiting for replicas is a Later."""
    body = {"acks": -1, "timeout_ms": timeout_ms, "transactional_id": None,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": memoryview(
                build_batch([(None, b"v", [], 1_700_000_000_000)] * 3))}]}]}
    return produce.handle(broker, _request(0, 9, body))  # type: ignore[arg-type]


async def _produce(broker: _Broker, timeout_ms: int = 2000) -> Any:
    """The response, awaited as the connection does."""
    response = await _produce_request(broker, timeout_ms)
    return await response.response if isinstance(response, Later) else response


def _fetch(broker: _Broker, replica_id: int, offset: int, epoch: int = -1) -> Any:
    body = {"replica_id": replica_id, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": "t", "partitions": [
                {"partition": 0, "current_leader_epoch": epoch, "fetch_offset": offset,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}
    return fetch.handle(broker, _request(1, 12, body))  # type: ignore[arg-type]


def _answer(response: dict[str, Any]) -> dict[str, Any]:
    return response["responses"][0]["partition_responses"][0]  # type: ignore[no-any-return]


def _fetched(response: dict[str, Any]) -> dict[str, Any]:
    return response["responses"][0]["partitions"][0]  # type: ignore[no-any-return]


def test_acks_all_completes_when_the_follower_fetch_passes_the_batch(tmp_path: Path) -> None:
    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        broker = _Broker(tmp_path)
        broker.lead(isr=(1, 2))
        parked = asyncio.ensure_future(_produce(broker))
        await asyncio.sleep(0.01)
        assert not parked.done()
        consumer = _fetched(await _fetch(broker, -1, 0))  # nothing committed yet
        follower = _fetched(await _fetch(broker, 2, 0))  # the leader's log end and beyond
        await _fetch(broker, 2, 3)  # the follower now holds 0-2: committed
        return _answer(await asyncio.wait_for(parked, 1)), consumer, follower

    answer, consumer, follower = asyncio.run(scenario())
    assert (answer["error_code"], answer["base_offset"]) == (0, 0)
    assert consumer["records"] == b"" and consumer["high_watermark"] == 0
    assert follower["records"].nbytes > 0 and follower["high_watermark"] == 0


def test_acks_all_returns_once_appended_and_answers_later(tmp_path: Path) -> None:
    """The connection goes on with its next request while this one waits for replicas."""
    async def scenario() -> tuple[int, bool, dict[str, Any]]:
        broker = _Broker(tmp_path)
        hosted = broker.lead(isr=(1, 2))
        later = await _produce_request(broker)
        assert isinstance(later, Later)
        answered = asyncio.ensure_future(later.response)
        await asyncio.sleep(0.01)
        waiting = not answered.done()
        await _fetch(broker, 2, 3)  # the follower holds the batch: committed
        return hosted.log_end_offset, waiting, _answer(await asyncio.wait_for(answered, 1))

    log_end, waiting, answer = asyncio.run(scenario())
    assert log_end == 3 and waiting
    assert (answer["error_code"], answer["base_offset"]) == (0, 0)


def test_a_request_waiting_for_replicas_lets_go_of_its_frame(tmp_path: Path) -> None:
    """Its records are memoryviews of the request's frame: once appended they are
    dropped, so nothing holds the frame (it is resizable: nothing exports it) while the
    answer waits, and metering still bills the bytes accepted."""
    batch = build_batch([(None, b"v", [], 1_700_000_000_000)] * 3)
    frame = bytearray(batch)
    billed: list[Any] = []

    async def scenario() -> tuple[bool, dict[str, Any]]:
        broker = _Broker(tmp_path)
        broker.metering = SimpleNamespace(produced=lambda request, sent, responses:
                                          billed.append(sent.sizes))
        broker.lead(isr=(1, 2))
        body = {"acks": -1, "timeout_ms": 2000, "transactional_id": None,
                "topic_data": [{"name": "t", "partition_data": [
                    {"index": 0, "records": memoryview(frame)[:len(batch)]}]}]}
        later: Any = await produce.handle(broker, _request(0, 9, body))  # type: ignore[arg-type]
        assert isinstance(later, Later)
        frame.extend(b"next request")  # BufferError if anything still exported the frame
        answered = asyncio.ensure_future(later.response)
        await asyncio.sleep(0.01)
        waiting = not answered.done()
        await _fetch(broker, 2, 3)
        return waiting, _answer(await asyncio.wait_for(answered, 1))

    waiting, answer = asyncio.run(scenario())
    assert waiting and answer["error_code"] == 0
    assert billed == [[[len(batch)]]]


def test_min_insync_refuses_before_storing(tmp_path: Path) -> None:
    async def scenario() -> tuple[dict[str, Any], int]:
        broker = _Broker(tmp_path)
        hosted = broker.lead(isr=(1, 2), min_insync=3)
        return _answer(await _produce(broker)), hosted.log_end_offset

    answer, log_end = asyncio.run(scenario())
    assert (answer["error_code"], log_end) == (ErrorCode.NOT_ENOUGH_REPLICAS, 0)


def test_acks_all_times_out_or_fails_on_leadership_loss_or_a_shrunken_isr(tmp_path: Path
                                                                          ) -> None:
    async def scenario() -> list[int]:
        broker = _Broker(tmp_path)
        hosted = broker.lead(isr=(1, 2))
        timed_out = _answer(await _produce(broker, timeout_ms=30))["error_code"]
        shrunk = asyncio.ensure_future(_produce(broker))
        await asyncio.sleep(0.01)
        hosted.begin_isr_change(10**12, 1)  # follower 2 lags: propose (1,), then it lands
        hosted.isr_change_done(3, (1,), 1)
        after_append = _answer(await asyncio.wait_for(shrunk, 1))["error_code"]
        broker.lead(isr=(1, 2))
        hosted.isr_change_done(3, (1, 2), 2)
        moved = asyncio.ensure_future(_produce(broker))
        await asyncio.sleep(0.01)
        broker.replicas.become_follower("t", 0, hosted.topic_id, 2, 4, LogConfig(), (2,),
                                        (1, 2, 3), 3)
        lost = _answer(await asyncio.wait_for(moved, 1))["error_code"]
        return [timed_out, after_append, lost]

    assert asyncio.run(scenario()) == [ErrorCode.REQUEST_TIMED_OUT,
                                       ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                                       ErrorCode.NOT_LEADER_OR_FOLLOWER]


def test_fetches_from_non_replicas_and_stale_epochs_are_refused(tmp_path: Path) -> None:
    async def scenario() -> list[int]:
        broker = _Broker(tmp_path)
        broker.lead(isr=(1, 2))
        return [_fetched(await _fetch(broker, 9, 0))["error_code"],
                _fetched(await _fetch(broker, 2, 0, epoch=2))["error_code"]]

    assert asyncio.run(scenario()) == [ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                       ErrorCode.FENCED_LEADER_EPOCH]


def test_offset_for_leader_epoch_answers_from_the_epoch_cache(tmp_path: Path) -> None:
    async def scenario() -> list[bodies.OffsetForLeaderEpochResponsePartition]:
        broker = _Broker(tmp_path)
        hosted = broker.lead(isr=(1,), min_insync=1)
        await _produce(broker)  # offsets 0-2 in epoch 3
        hosted.become_leader(6, (1,), (1, 2, 3), 1, 0)
        await _produce(broker)  # offsets 3-5 in epoch 6
        body = {"replica_id": 2, "topics": [{"topic": "t", "partitions": [
            {"partition": 0, "current_leader_epoch": 6, "leader_epoch": epoch}
            for epoch in (3, 4, 6, 1)] + [
            {"partition": 0, "current_leader_epoch": 5, "leader_epoch": 3}]}]}
        response = await offset_for_leader_epoch.handle(
            broker, _request(23, 4, body))  # type: ignore[arg-type]
        return response["topics"][0]["partitions"]

    answers = [(a["error_code"], a["leader_epoch"], a["end_offset"]) for a in asyncio.run(
        scenario())]
    # epoch 1, older than every epoch here: Kafka's answer, where the known ones start
    assert answers == [(0, 3, 3), (0, 3, 3), (0, 6, 6), (0, 1, 0),
                       (ErrorCode.FENCED_LEADER_EPOCH, -1, -1)]
