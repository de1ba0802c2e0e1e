"""Assertions over what a log returns to readers, and a loaded LogManager."""

from __future__ import annotations

from pathlib import Path

from brokerd.protocol.records import BatchHeader, iter_batches, validate_batch
from brokerd.storage import Log, LogConfig, LogManager

from .conftest import FakeClock


def read_all(log: Log, start: int | None = None) -> list[BatchHeader]:
    """Every batch from ``start`` (default: log start) to the log end, each CRC-checked:
    a reader must never be handed a corrupt byte."""
    result = log.read(log.log_start_offset if start is None else start, 1 << 40)
    data = result.read()
    headers = []
    consumed = 0
    for position, header in iter_batches(data):
        validate_batch(data, position, header)
        headers.append(header)
        consumed = position + header.size_in_bytes
    assert consumed == len(data) == result.size
    return headers


def offsets(headers: list[BatchHeader]) -> list[tuple[int, int]]:
    return [(h.base_offset, h.last_offset) for h in headers]


def manager(dirs: list[Path], clock: FakeClock, **config: object) -> LogManager:
    """A loaded LogManager over ``dirs`` with a config built from ``config``."""
    result = LogManager(dirs, LogConfig(**config), clock=clock)  # type: ignore[arg-type]
    result.load()
    return result
