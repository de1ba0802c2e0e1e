"""DescribeLogDirs over a real ReplicaManager and LogManager with two log dirs: sizes per
partition and dir, the request's filter, and a failed dir reported as Kafka reports it."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from brokerd.protocol import ErrorCode, RequestHeader
from brokerd.protocol.records import build_batch
from brokerd.replication.manager import ReplicaManager
from brokerd.server.handlers import describe_log_dirs
from brokerd.server.request import Request
from brokerd.storage import LogConfig, LogManager

RECORDS = build_batch([(None, b"v" * 100, [], 1_700_000_000_000)] * 5)


def _broker(tmp_path: Path) -> SimpleNamespace:
    manager = LogManager([tmp_path / "a", tmp_path / "b"], LogConfig())
    manager.load()
    replicas = ReplicaManager(1, manager)
    for partition in range(2):
        hosted = replicas.become_leader("t", partition, uuid.uuid4(), 1, LogConfig(), (1,),
                                        (1,), 0)
        hosted.log.append_as_leader(memoryview(RECORDS), 1)
    replicas.become_leader("u", 0, uuid.uuid4(), 1, LogConfig(), (1,), (1,), 0)
    return SimpleNamespace(replicas=replicas)


def _describe(broker: SimpleNamespace, topics: list[dict[str, Any]] | None,
              version: int = 4) -> dict[str, Any]:
    request = Request(RequestHeader(35, version, 1, "c"), {"topics": topics},
                      None)  # type: ignore[arg-type]  # the handler never looks at it
    return asyncio.run(describe_log_dirs.handle(broker, request))  # type: ignore[arg-type]


def _sizes(answer: dict[str, Any]) -> dict[tuple[str, int], tuple[str, int]]:
    """(topic, partition) -> (log dir, size) over every dir of the answer."""
    return {(topic["name"], p["partition_index"]): (result["log_dir"], p["partition_size"])
            for result in answer["results"] for topic in result["topics"]
            for p in topic["partitions"]}


def test_every_hosted_partition_is_listed_under_its_dir_with_its_size(tmp_path: Path) -> None:
    broker = _broker(tmp_path)
    manager = broker.replicas.log_manager
    answer = _describe(broker, None)
    assert answer["error_code"] == 0
    assert [r["log_dir"] for r in answer["results"]] == [str(tmp_path / "a"), str(tmp_path / "b")]
    assert all(r["error_code"] == 0 and r["total_bytes"] > 0 and 0 <= r["usable_bytes"]
               <= r["total_bytes"] for r in answer["results"])
    assert _sizes(answer) == {
        key: (str(manager.log_dir_of(*key)), manager.get(*key).size_bytes)
        for key in [("t", 0), ("t", 1), ("u", 0)]}
    assert _sizes(answer)[("t", 0)][1] == len(RECORDS)
    assert _sizes(answer)[("u", 0)][1] == 0


def test_only_the_named_partitions_this_broker_holds_are_listed(tmp_path: Path) -> None:
    answer = _describe(_broker(tmp_path), [{"topic": "t", "partitions": [1, 7]},
                                           {"topic": "nothing", "partitions": [0]}])
    assert list(_sizes(answer)) == [("t", 1)]
    assert len(answer["results"]) == 2  # every dir is listed, holding something or not


def test_a_failed_dir_is_listed_with_a_storage_error_and_no_partitions(tmp_path: Path) -> None:
    broker = _broker(tmp_path)
    failed = tmp_path / "a"
    moved = broker.replicas.log_manager.take_offline(failed)
    answer = _describe(broker, None)
    first = answer["results"][0]
    assert (first["log_dir"], first["error_code"], first["topics"], first["total_bytes"]) == (
        str(failed), int(ErrorCode.KAFKA_STORAGE_ERROR), [], -1)
    assert not set(moved) & set(_sizes(answer))
