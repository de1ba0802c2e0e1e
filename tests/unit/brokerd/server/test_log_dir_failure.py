"""A failed write to a log directory: the partition answers KAFKA_STORAGE_ERROR and stores
nothing, the broker is told once, closes its ZooKeeper session and halts."""

from __future__ import annotations

import asyncio
import errno
import uuid
from collections.abc import Awaitable, Callable
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


def handler(events: list[str], online: list[Path],
            close_session: Callable[[], Awaitable[None]] | None = None) -> LogDirFailureHandler:
    def take_offline(log_dir: Path) -> list[tuple[str, int]]:
        events.append(f"offline {log_dir}")
        online.remove(log_dir)
        return [("t", 0)]

    async def report(keys: list[tuple[str, int]]) -> None:
        events.append(f"reported {keys}")

    async def close() -> None:
        events.append("session closed")

    return LogDirFailureHandler(take_offline, lambda: list(online), report,
                                close_session or close,
                                halt=lambda code: events.append(f"halt {code}"))


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_failed_dir_goes_offline_once_and_the_others_keep_serving() -> None:
    events: list[str] = []

    async def scenario() -> None:
        failed = handler(events, [Path("/data/a"), Path("/data/b")])
        failed(Path("/data/a"), OSError(errno.ENOSPC, "full"))
        failed(Path("/data/a"), OSError(errno.ENOSPC, "full"))  # a second failing write
        await settle()
        assert failed.offline == {Path("/data/a")}

    asyncio.run(scenario())
    assert events == ["offline /data/a", "reported [('t', 0)]"]


def test_the_last_dir_failing_closes_the_session_then_halts() -> None:
    events: list[str] = []

    async def scenario() -> None:
        handler(events, [Path("/data/a")])(Path("/data/a"), OSError(errno.ENOSPC, "full"))
        await settle()

    asyncio.run(scenario())
    assert events == ["offline /data/a", "session closed", f"halt {HALT_EXIT_CODE}"]


def test_a_hanging_session_close_does_not_stop_the_halt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("brokerd.server.log_dir_failure.SESSION_CLOSE_TIMEOUT_S", 0.05)
    events: list[str] = []

    async def never() -> None:
        await asyncio.Event().wait()

    async def scenario() -> None:
        handler(events, [Path("/d")], close_session=never)(Path("/d"), OSError(errno.EIO, "io"))
        await asyncio.sleep(0.3)

    asyncio.run(scenario())
    assert events == ["offline /d", f"halt {HALT_EXIT_CODE}"]


def test_the_log_manager_drops_a_failed_dir_and_creates_nothing_there(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    manager = LogManager([first, second], LogConfig())
    manager.load()
    manager.get_or_create("t", 0)
    manager.get_or_create("t", 1)
    in_first = [key for key in [("t", 0), ("t", 1)] if manager.log_dir_of(*key) == first]
    checkpoints = {path: path.read_bytes() for path in first.iterdir() if path.is_file()}
    assert manager.take_offline(first) == in_first
    assert all(manager.get(*key) is None for key in in_first)
    for partition in range(2, 5):
        manager.get_or_create("t", partition)
        assert manager.log_dir_of("t", partition) == second
    manager.write_checkpoints()
    assert {path: path.read_bytes() for path in first.iterdir() if path.is_file()} \
        == checkpoints  # nothing written to the offline dir
    manager.take_offline(second)
    with pytest.raises(LogDirFailure):
        manager.get_or_create("t", 9)
    manager.close()
