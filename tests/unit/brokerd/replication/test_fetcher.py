"""The follower fetcher's decisions against a scripted leader (no sockets): truncation
before the first fetch of an epoch or on the leader's diverging epoch, appends,
out-of-range restarts, parked errors."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from brokerd.protocol import ApiKey, ErrorCode
from brokerd.protocol.records import build_batch
from brokerd.replication.fetcher import (
    BACKOFF_S,
    FIRST_BACKOFF_S,
    FetcherManager,
    FetchSettings,
    ReplicaFetcher,
    _Fetching,
)
from brokerd.replication.partition import Partition
from brokerd.replication.throttle import ByteRateLimit
from brokerd.storage import LogConfig, LogManager


def batch(count: int) -> memoryview:
    return memoryview(build_batch([(None, b"v", [], 1_700_000_000_000)] * count))


class ScriptedLeader:
    """Answers each request with the next scripted per-partition answer, recording bodies."""

    def __init__(self, *answers: dict[str, Any]) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[int, dict[str, Any]]] = []

    async def request(self, api_key: int, version: int, body: dict[str, Any],
                      extra_wait_s: float = 0.0, codec: Any = None) -> dict[str, Any]:
        self.requests.append((api_key, body))
        answer = self.answers.pop(0)
        if api_key == ApiKey.OFFSET_FOR_LEADER_EPOCH:
            return {"topics": [{"topic": "t", "partitions": [{"partition": 0, **answer}]}]}
        return {"error_code": 0, "session_id": 0, "responses": [
            {"topic": "t", "partitions": [{"partition_index": 0, **answer}]}]}


def follower(tmp_path: Path, epochs: tuple[tuple[int, int], ...] = ()) -> Partition:
    """A follower of broker 1 in epoch 5 whose log holds ``(epoch, records)`` batches."""
    log = LogManager([tmp_path], LogConfig()).get_or_create("t", 0, LogConfig())
    for epoch, count in epochs:
        log.append_as_leader(batch(count), epoch)
    partition = Partition("t", 0, uuid.uuid4(), log, broker_id=2)
    partition.become_follower(1, 5, (1, 2), (1, 2), 0)
    return partition


def run(partition: Partition, leader: ScriptedLeader, rounds: int) -> ReplicaFetcher:
    async def scenario() -> ReplicaFetcher:
        fetcher = ReplicaFetcher(1, FetchSettings(2), lambda _: None, ByteRateLimit())
        fetcher.partitions[("t", 0)] = _Fetching(partition, partition.leader_epoch)
        for _ in range(rounds):
            await fetcher._truncate(leader)  # type: ignore[arg-type]
            await fetcher._fetch(leader)  # type: ignore[arg-type]
        return fetcher
    return asyncio.run(scenario())


def test_a_divergent_tail_is_truncated_at_the_leaders_end_of_the_older_epoch(tmp_path: Path
                                                                             ) -> None:
    partition = follower(tmp_path / "f", ((1, 5), (2, 3)))  # 0-4 in epoch 1, 5-7 in 2
    leader_log = LogManager([tmp_path / "l"], LogConfig()).get_or_create("t", 0, LogConfig())
    leader_log.append_as_leader(batch(5), 1)
    leader_log.append_as_leader(batch(4), 5)  # the leader's 5-8, written in epoch 5
    leader = ScriptedLeader({"error_code": 0, "leader_epoch": 1, "end_offset": 5},
                            {"error_code": 0, "high_watermark": 9, "log_start_offset": 0,
                             "records": leader_log.read(5, 1 << 20).read()})
    run(partition, leader, 1)
    epoch_request = leader.requests[0][1]
    assert epoch_request["replica_id"] == 2
    assert epoch_request["topics"][0]["partitions"][0] == {
        "partition": 0, "current_leader_epoch": 5, "leader_epoch": 2}
    fetch_request = leader.requests[1][1]["topics"][0]["partitions"][0]
    assert fetch_request["fetch_offset"] == 5 and fetch_request["current_leader_epoch"] == 5
    assert (partition.log_end_offset, partition.high_watermark) == (9, 9)
    assert partition.log.leader_epoch_cache.entries == [(1, 0), (5, 5)]


def run_added(partition: Partition, leader: ScriptedLeader, rounds: int,
              settings: FetchSettings) -> None:
    """Like :func:`run`, for a partition handed to the fetcher as the manager does."""
    async def scenario() -> None:
        fetcher = ReplicaFetcher(1, settings, lambda _: None, ByteRateLimit())
        fetcher.add(partition, throttled=False)
        assert fetcher._task is not None
        fetcher._task.cancel()  # its own loop would connect: the rounds are driven here
        for _ in range(rounds):
            await fetcher._truncate(leader)  # type: ignore[arg-type]
            await fetcher._fetch(leader)  # type: ignore[arg-type]
    asyncio.run(scenario())


def test_a_new_epoch_is_fetched_at_once_and_truncated_by_the_leaders_diverging_epoch(
        tmp_path: Path) -> None:
    partition = follower(tmp_path / "f", ((1, 5), (2, 3)))  # 0-4 in epoch 1, 5-7 in 2
    leader_log = LogManager([tmp_path / "l"], LogConfig()).get_or_create("t", 0, LogConfig())
    leader_log.append_as_leader(batch(5), 1)
    leader_log.append_as_leader(batch(4), 5)  # the leader's 5-8, written in epoch 5
    leader = ScriptedLeader({"error_code": 0, "high_watermark": 0, "log_start_offset": 0,
                             "records": None, "diverging_epoch": {"epoch": 1, "end_offset": 5}},
                            {"error_code": 0, "high_watermark": 9, "log_start_offset": 0,
                             "records": leader_log.read(5, 1 << 20).read()})
    run_added(partition, leader, 2, FetchSettings(2))
    assert [api for api, _ in leader.requests] == [ApiKey.FETCH, ApiKey.FETCH]
    first, second = (body["topics"][0]["partitions"][0] for _, body in leader.requests)
    assert (first["fetch_offset"], first["last_fetched_epoch"]) == (8, 2)
    assert (second["fetch_offset"], second["last_fetched_epoch"]) == (5, 1)
    assert (partition.log_end_offset, partition.high_watermark) == (9, 9)
    assert partition.log.leader_epoch_cache.entries == [(1, 0), (5, 5)]


def test_before_kafka_2_7_iv1_a_new_epoch_asks_offset_for_leader_epoch_first(
        tmp_path: Path) -> None:
    partition = follower(tmp_path, ((1, 5), (2, 3)))
    leader = ScriptedLeader({"error_code": 0, "leader_epoch": 1, "end_offset": 5},
                            {"error_code": 0, "high_watermark": 5, "log_start_offset": 0,
                             "records": None})
    run_added(partition, leader, 1, FetchSettings(2, truncation_on_fetch=False))
    assert [api for api, _ in leader.requests] == [ApiKey.OFFSET_FOR_LEADER_EPOCH, ApiKey.FETCH]
    assert partition.log_end_offset == 5


def test_a_follower_behind_the_leaders_log_start_restarts_there(tmp_path: Path) -> None:
    partition = follower(tmp_path, ((1, 3),))
    leader = ScriptedLeader({"error_code": 0, "leader_epoch": 1, "end_offset": 3},
                            {"error_code": ErrorCode.OFFSET_OUT_OF_RANGE, "high_watermark": 200,
                             "log_start_offset": 100, "records": None},
                            {"error_code": 0, "high_watermark": 200, "log_start_offset": 100,
                             "records": None})
    run(partition, leader, 2)
    assert (partition.log_start_offset, partition.log_end_offset) == (100, 100)
    assert leader.requests[2][1]["topics"][0]["partitions"][0]["fetch_offset"] == 100


def test_a_fenced_partition_is_parked_and_a_follower_without_epochs_keeps_its_hw(
        tmp_path: Path) -> None:
    partition = follower(tmp_path)
    leader = ScriptedLeader({"error_code": ErrorCode.FENCED_LEADER_EPOCH, "high_watermark": -1,
                             "log_start_offset": -1, "records": None})
    fetcher = run(partition, leader, 2)
    assert [api for api, _ in leader.requests] == [ApiKey.FETCH]  # no epoch: no question
    assert fetcher.partitions[("t", 0)].parked_until > 0


def test_a_closed_fetcher_manager_follows_nothing(tmp_path: Path) -> None:
    async def scenario() -> tuple[bool, bool]:
        manager = FetcherManager(FetchSettings(2), lambda _: None)
        partition = follower(tmp_path)
        manager.follow(partition)
        before = manager.fetching(("t", 0))
        await manager.close()  # the broker is leaving (controlled shutdown)
        manager.follow(partition)
        return before, manager.fetching(("t", 0))

    assert asyncio.run(scenario()) == (True, False)


class RefusingLeader:
    """Answers every partition of every Fetch with NOT_LEADER_OR_FOLLOWER (a leader that
    has just handed its leaderships away)."""

    async def request(self, api_key: int, version: int, body: dict[str, Any],
                      extra_wait_s: float = 0.0, codec: Any = None) -> dict[str, Any]:
        return {"error_code": 0, "session_id": 0, "responses": [
            {"topic": topic["topic"], "partitions": [
                {"partition_index": p["partition"], "high_watermark": -1,
                 "log_start_offset": -1, "records": None,
                 "error_code": ErrorCode.NOT_LEADER_OR_FOLLOWER}
                for p in topic["partitions"]]}
            for topic in body["topics"]]}


def refused_fetcher(tmp_path: Path, count: int) -> ReplicaFetcher:
    """A fetcher of ``count`` partitions whose one fetch :class:`RefusingLeader` answered."""
    log = LogManager([tmp_path], LogConfig())

    async def scenario() -> ReplicaFetcher:
        fetcher = ReplicaFetcher(1, FetchSettings(2), lambda _: None, ByteRateLimit())
        for index in range(count):
            partition = Partition("t", index, uuid.uuid4(),
                                  log.get_or_create("t", index, LogConfig()), broker_id=2)
            partition.become_follower(1, 5, (1, 2), (1, 2), 0)
            fetcher.partitions[("t", index)] = _Fetching(partition, partition.leader_epoch,
                                                         needs_truncation=False)
            fetcher._stale.add(("t", index))
        await fetcher._fetch(RefusingLeader())  # type: ignore[arg-type]
        return fetcher
    return asyncio.run(scenario())


def test_partitions_an_answer_parks_are_logged_in_one_line(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="brokerd.replication.fetcher"):
        fetcher = refused_fetcher(tmp_path, 5)
    assert all(f.parked_until > 0 for f in fetcher.partitions.values())
    [line] = [r.getMessage() for r in caplog.records]
    error = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    head, _, examples = line.partition(" partition(s): ")
    assert head == f"leader 1 answered error {error} for 5"
    named, _, rest = examples.partition(" and ")
    assert rest == "2 more; retrying after 0.1 s, doubling up to 0.5 s"
    assert set(named.split(", ")) < {f"t-{index} (epoch 5)" for index in range(5)}
    assert len(named.split(", ")) == 3


def test_a_refused_partition_backs_off_doubling_and_a_fetched_one_starts_again(
        tmp_path: Path) -> None:
    fetcher = refused_fetcher(tmp_path, 1)
    key = ("t", 0)
    fetching = fetcher.partitions[key]
    waits = [fetching.backoff_s]
    for _ in range(3):
        fetcher._park(key, fetching, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        waits.append(fetching.backoff_s)
    assert waits == [FIRST_BACKOFF_S, 0.2, 0.4, BACKOFF_S]
    assert fetching.parked_until - time.monotonic() <= BACKOFF_S
    fetching.parked_until = 0.0
    fetcher._apply(key, fetching, {"fetch_offset": fetching.partition.log_end_offset}, {
        "error_code": 0, "high_watermark": 0, "log_start_offset": 0, "records": None})
    fetcher._park(key, fetching, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert fetching.backoff_s == FIRST_BACKOFF_S  # a fetch since: the short wait again


def test_parked_partitions_are_looked_at_again_only_once_their_back_off_is_over(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fetcher = refused_fetcher(tmp_path, 5)
    fetcher._refresh(time.monotonic())  # the answer's parks sorted out
    looked_at: list[tuple[str, int]] = []
    fields_of = fetcher._fields_of

    def counting(fetching: _Fetching, now: float) -> dict[str, Any] | None:
        looked_at.append((fetching.partition.topic, fetching.partition.index))
        return fields_of(fetching, now)
    monkeypatch.setattr(fetcher, "_fields_of", counting)
    until = max(f.parked_until for f in fetcher.partitions.values())
    for _ in range(3):
        fetcher._refresh(until - 0.1)
    assert looked_at == [] and fetcher._fields == {}
    fetcher._refresh(until)
    assert sorted(looked_at) == [("t", index) for index in range(5)]
    assert sorted(fetcher._fields) == [("t", index) for index in range(5)]  # fetched again


def test_the_periodic_full_check_is_spread_over_the_rounds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = LogManager([tmp_path], LogConfig())
    fetcher = ReplicaFetcher(1, FetchSettings(2), lambda _: None, ByteRateLimit())
    for index in range(100):
        partition = Partition("t", index, uuid.uuid4(),
                              log.get_or_create("t", index, LogConfig()), broker_id=2)
        partition.become_follower(1, 5, (1, 2), (1, 2), 0)
        fetcher.partitions[("t", index)] = _Fetching(partition, partition.leader_epoch,
                                                     needs_truncation=False)
    start = 1000.0
    fetcher._refresh(start)  # the first period's check takes everything at once
    assert len(fetcher._fields) == 100
    looked_at: list[int] = []
    fields_of = fetcher._fields_of

    def counting(fetching: _Fetching, now: float) -> dict[str, Any] | None:
        looked_at.append(fetching.partition.index)
        return fields_of(fetching, now)
    monkeypatch.setattr(fetcher, "_fields_of", counting)
    per_round = []
    for step in range(1, 31):  # a round every 0.5 s, for 15 s
        before = len(looked_at)
        fetcher._refresh(start + step * 0.5)
        per_round.append(len(looked_at) - before)
    # Nothing until the next period (10 s on), then 100 partitions over 5 s, once each.
    assert per_round[:19] == [0] * 19
    assert max(per_round) <= 10 and sum(per_round[19:29]) == 100
    assert sorted(looked_at) == list(range(100))
