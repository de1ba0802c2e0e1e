"""Shared fixtures: a hand-driven clock and a factory of real v2 batches."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from brokerd.protocol.records import RecordInput, build_batch
from brokerd.storage import Log, LogConfig

NOW_MS = 1_700_000_000_000


class FakeClock:
    """Seconds since the epoch, moved only by the test."""

    def __init__(self, now_ms: int = NOW_MS) -> None:
        self.now_ms = now_ms

    def __call__(self) -> float:
        return self.now_ms / 1000

    def advance(self, ms: int) -> None:
        self.now_ms += ms


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def batch(
    count: int = 1,
    value_size: int = 10,
    timestamp: int = NOW_MS,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> memoryview:
    """A CreateTime batch of ``count`` records, timestamps ``timestamp`` .. +count-1."""
    records: list[RecordInput] = [
        (b"k", bytes([i % 256]) * value_size, [], timestamp + i) for i in range(count)
    ]
    return memoryview(
        build_batch(
            records,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
        )
    )


def commit(log: Log) -> Log:
    """Advance the high watermark to the log end: the log's owner (replication's
    ``Partition``) does this once the in-sync replicas hold the data; storage tests play
    that owner for a single replica. Returns ``log``."""
    log.high_watermark = log.log_end_offset
    return log


@pytest.fixture
def open_log(tmp_path: Path, clock: FakeClock) -> Callable[..., Log]:
    """Open (or reopen) the log at ``tmp_path/t-0`` with a config built from kwargs."""

    def opener(clean_shutdown: bool = True, recovery_point: int = 0, **config: object) -> Log:
        return Log(
            tmp_path / "t-0",
            LogConfig(**config),  # type: ignore[arg-type]
            recovery_point=recovery_point,
            clean_shutdown=clean_shutdown,
            clock=clock,
        )

    return opener
