"""Fetch and ListOffsets with isolation_level read_committed over a real leader replica:
they stop at the last stable offset and name the aborted transactions in range."""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from brokerd.protocol import ErrorCode, bodies
from brokerd.protocol.records import build_batch, iter_batches
from brokerd.replication.partition import Partition
from brokerd.server.handlers import list_offsets
from brokerd.server.handlers.fetch import _FetchRound, _Wanted
from brokerd.storage import Log, LogConfig


def _leader(tmp_path: Path) -> Partition:
    partition = Partition("t", 0, uuid.uuid4(), Log(tmp_path / "t-0", LogConfig()), broker_id=1)
    assert partition.become_leader(1, (1,), (1,), zk_version=0, now_ms=0)
    return partition


def _txn(pid: int) -> memoryview:
    return memoryview(build_batch([(b"k", b"v", [], 1)], producer_id=pid, producer_epoch=0,
                                  base_sequence=0, is_transactional=True))


def _fetch(partition: Partition, isolation_level: int, offset: int = 0
           ) -> bodies.FetchResponsePartition:
    broker = SimpleNamespace(leader_partition=lambda topic, index, epoch=-1: (partition, ErrorCode.NONE))
    body = {"replica_id": -1, "isolation_level": isolation_level, "max_bytes": 1 << 20}
    wanted = {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20,
              "current_leader_epoch": -1}
    (read,) = _FetchRound(broker, body).read([_Wanted("t", wanted)])  # type: ignore[arg-type]
    return read.answer


def _offsets(answer: bodies.FetchResponsePartition) -> list[int]:
    records: Any = answer["records"]  # a RegionList, or b"" when nothing was read
    data = b"".join(region.read() for region in records.regions) if records else b""
    return [header.base_offset for _, header in iter_batches(data)]


def test_read_committed_stops_at_an_open_transaction_and_reports_aborts(tmp_path: Path) -> None:
    partition = _leader(tmp_path)
    partition.append_as_leader(memoryview(build_batch([(None, b"a", [], 1)])))  # 0
    partition.append_as_leader(_txn(5))                                          # 1
    partition.append_as_leader(_txn(6))                                          # 2
    partition.log.append_marker(5, 0, False, 0, 1)                               # 3: abort 5
    partition.append_as_leader(memoryview(build_batch([(None, b"b", [], 1)])))  # 4
    assert partition.high_watermark == 5 and partition.log.last_stable_offset == 2
    committed = _fetch(partition, 1)
    assert _offsets(committed) == [0, 1]
    assert committed["last_stable_offset"] == 2
    assert committed["aborted_transactions"] == [{"producer_id": 5, "first_offset": 1}]
    uncommitted = _fetch(partition, 0)
    assert _offsets(uncommitted) == [0, 1, 2, 3, 4]
    assert uncommitted["aborted_transactions"] is None

    partition.log.append_marker(6, 0, True, 0, 1)                                # 5: commit 6
    partition.log.high_watermark = partition.log_end_offset
    assert _offsets(_fetch(partition, 1, offset=2)) == [2, 3, 4, 5]


def test_list_offsets_latest_is_the_lso_for_read_committed(tmp_path: Path) -> None:
    partition = _leader(tmp_path)
    partition.append_as_leader(memoryview(build_batch([(None, b"a", [], 1)])))
    partition.append_as_leader(_txn(5))
    assert list_offsets.lookup(partition, list_offsets.LATEST) == (-1, 2)
    assert list_offsets.lookup(partition, list_offsets.LATEST, read_committed=True) == (-1, 1)
