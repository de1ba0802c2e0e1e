"""Kafka's small text checkpoint files and the clean-shutdown marker.

Offset checkpoints (one per log dir: ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint``, ``replication-offset-checkpoint``)::

    0                 <- format version
    2                 <- number of entries
    orders 0 1500     <- topic, partition, offset
    orders 1 1498

The leader-epoch checkpoint (``leader-epoch-checkpoint`` in each partition dir) has the
same header and ``epoch start_offset`` lines. Files are replaced atomically (write a
``.tmp``, fsync, rename, fsync the directory), so a reader sees the old or the new file,
never a mix. A file that is missing or does not parse reads as empty: every consumer of
these files treats "no entry" as "assume nothing" (full recovery, start from the first
segment), which is always safe.

Callers on the event loop that must not wait for an fsync hand files to a
:class:`~brokerd.storage.checkpoint_writer.CheckpointWriter`, which replaces them in
batches with the same contract.

Thread-safety: plain functions over files (callers serialise writes to one file).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"

_VERSION = 0

TopicPartition = tuple[str, int]


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` so that a crash leaves either version intact."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """Make renames and creations inside ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _encode_lines(lines: Sequence[str]) -> bytes:
    return (f"{_VERSION}\n{len(lines)}\n" + "".join(line + "\n" for line in lines)).encode()


def _write_lines(path: Path, lines: Sequence[str]) -> None:
    write_atomically(path, _encode_lines(lines))


def _read_lines(path: Path, fields: int) -> list[list[str]]:
    """The entry lines split into ``fields`` parts; [] if missing or malformed."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    try:
        if int(lines[0]) != _VERSION:
            raise ValueError(f"unknown version {lines[0]!r}")
        count = int(lines[1])
        entries = [line.split() for line in lines[2 : 2 + count]]
        if len(entries) != count or any(len(entry) != fields for entry in entries):
            raise ValueError("entry count or shape mismatch")
        return entries
    except (IndexError, ValueError) as exc:
        log.warning("ignoring malformed checkpoint %s: %s", path, exc)
        return []


def write_offset_checkpoint(path: Path, offsets: Mapping[TopicPartition, int]) -> None:
    lines = [f"{topic} {part} {offset}" for (topic, part), offset in sorted(offsets.items())]
    _write_lines(path, lines)


def read_offset_checkpoint(path: Path) -> dict[TopicPartition, int]:
    try:
        return {(t, int(p)): int(o) for t, p, o in _read_lines(path, 3)}
    except ValueError as exc:
        log.warning("ignoring malformed checkpoint %s: %s", path, exc)
        return {}


def encode_epoch_checkpoint(entries: Sequence[tuple[int, int]]) -> bytes:
    return _encode_lines([f"{epoch} {offset}" for epoch, offset in entries])


def read_epoch_checkpoint(path: Path) -> list[tuple[int, int]]:
    try:
        return [(int(e), int(o)) for e, o in _read_lines(path, 2)]
    except ValueError as exc:
        log.warning("ignoring malformed checkpoint %s: %s", path, exc)
        return []
