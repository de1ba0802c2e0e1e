"""The replica-backed offsets log, on real storage in a temporary directory."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from brokerd.groups import GroupConfig, GroupCoordinator
from brokerd.groups.partition_log import OFFSETS_TOPIC, NotOffsetsLeaderError, ReplicaOffsetsLog
from brokerd.protocol.records import RecordInput, build_batch
from brokerd.replication import Partition
from brokerd.replication.manager import ReplicaManager
from brokerd.storage import LogConfig, LogManager
from tests.unit.brokerd.groups.helpers import commit_body

CONFIG = GroupConfig(num_partitions=1)


def replicas(directory: Path) -> ReplicaManager:
    manager = ReplicaManager(1, LogManager([directory], LogConfig(cleanup_policy=("compact",))))
    manager.become_leader(OFFSETS_TOPIC, 0, uuid.uuid4(), 0, manager.log_manager.default_config)
    return manager


def offsets_partition(manager: ReplicaManager) -> Partition:
    hosted = manager.get(OFFSETS_TOPIC, 0)
    assert hosted is not None, "replicas() makes this broker the partition's leader"
    return hosted


def test_commits_survive_a_new_coordinator_on_the_same_log(tmp_path: Path) -> None:
    hosted = replicas(tmp_path)

    async def scenario() -> dict[tuple[str, int], int] | None:
        first = GroupCoordinator(ReplicaOffsetsLog(hosted), CONFIG)
        await first.load_partition(0)
        for offset in (5, 9):
            await first.offset_commit(commit_body({("t", 0): offset, ("t", 1): offset + 1}), 8)
        await first.close()
        second = GroupCoordinator(ReplicaOffsetsLog(hosted), CONFIG)
        await second.load_partition(0)
        offsets = second.committed_offsets("g")
        await second.close()
        return offsets

    assert asyncio.run(scenario()) == {("t", 0): 9, ("t", 1): 10}
    assert offsets_partition(hosted).high_watermark == 4


def test_reads_in_chunks_and_from_inside_a_batch(tmp_path: Path) -> None:
    hosted = replicas(tmp_path)
    partition = offsets_partition(hosted)
    for n in range(3):
        records: list[RecordInput] = [(f"k{n}{i}".encode(), b"v" * 100, [], 0) for i in range(2)]
        partition.append_as_leader(memoryview(build_batch(records)))
    partition.log.delete_records_before(1)  # the log start now lies inside the first batch
    log = ReplicaOffsetsLog(hosted, read_chunk_bytes=1)
    assert [key for key, _ in log.read_partition(0)] == [b"k01", b"k10", b"k11", b"k20",
                                                          b"k21"]


def test_partitions_not_hosted_are_refused(tmp_path: Path) -> None:
    log = ReplicaOffsetsLog(replicas(tmp_path))
    with pytest.raises(NotOffsetsLeaderError):
        list(log.read_partition(7))
    with pytest.raises(NotOffsetsLeaderError):
        asyncio.run(log.append(7, build_batch([(b"k", b"v", [], 0)])))
