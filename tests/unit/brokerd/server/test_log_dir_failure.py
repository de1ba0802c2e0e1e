"""A failed write to a log directory: the partition answers KAFKA_STORAGE_ERROR and stores
nothing, the broker is told once, closes its ZooKeeper session and halts."""

from __future__ import annotations

import asyncio
import errno
import uuid
from pathlib import Path

import pytest

from brokerd.protocol import ErrorCode
from brokerd.protocol.records import build_batch
from brokerd.replication.partition import Partition
from brokerd.server.log_dir_failure import HALT_EXIT_CODE, LogDirFailureHandler
from brokerd.storage import LogConfig, LogManager
from brokerd.storage.errors import LogDirFailure


def records(*values: bytes) -> memoryview:
    return memoryview(build_batch([(None, v, [], 1_700_000_000_000) for v in values]))


def test_a_failed_append_answers_kafka_storage_error_and_stores_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = LogManager([tmp_path], LogConfig()).get_or_create("t", 0, LogConfig())
    partition = Partition("t", 0, uuid.uuid4(), log, broker_id=1)
    partition.become_leader(0, (1,), (1,), zk_version=0, now_ms=0)
    partition.append_as_leader(records(b"kept"))
    reported: list[tuple[Path, OSError]] = []
    partition.on_log_dir_failure = lambda log_dir, exc: reported.append((log_dir, exc))

    def disk_full(*_: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("os.pwrite", disk_full)
    with pytest.raises(LogDirFailure) as failure:
        partition.append_as_leader(records(b"lost"))
    assert failure.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert failure.value.log_dir == tmp_path
    assert [(log_dir, exc.errno) for log_dir, exc in reported] == [(tmp_path, errno.ENOSPC)]
    assert partition.log_end_offset == 1
    monkeypatch.undo()
    assert partition.append_as_leader(records(b"after")).base_offset == 1  # no gap


def test_the_broker_closes_its_session_then_halts_once() -> None:
    events: list[str] = []

    async def close_session() -> None:
        events.append("session closed")

    async def scenario() -> None:
        handler = LogDirFailureHandler(close_session,
                                       halt=lambda code: events.append(f"halt {code}"))
        handler(Path("/data/a"), OSError(errno.ENOSPC, "full"))
        handler(Path("/data/a"), OSError(errno.ENOSPC, "full"))
        for _ in range(5):
            await asyncio.sleep(0)
        assert handler.offline == {Path("/data/a")}

    asyncio.run(scenario())
    assert events == ["session closed", f"halt {HALT_EXIT_CODE}"]


def test_a_hanging_session_close_does_not_stop_the_halt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("brokerd.server.log_dir_failure.SESSION_CLOSE_TIMEOUT_S", 0.05)
    halted: list[int] = []

    async def never() -> None:
        await asyncio.Event().wait()

    async def scenario() -> None:
        LogDirFailureHandler(never, halt=halted.append)(Path("/d"), OSError(errno.EIO, "io"))
        await asyncio.sleep(0.3)

    asyncio.run(scenario())
    assert halted == [HALT_EXIT_CODE]
