"""Per-window record sequences that never repeat, across restarts: the sequence book.

Why: the billing job identifies a ``__usage`` record by ``(broker_id, window_start,
sequence)`` and counts each identity once.  A re-send of the same record (an append retried
after a failure) must keep its identity, and new content must never reuse one — also when
the broker restarts within the same minute, or after a kill -9.

Rule: the book holds, per window start, the next unused sequence (0 for a window never
seen).  The broker persists the book *before* any record numbered from it leaves the
process, so a restarted broker continues above every sequence that may exist in
``__usage``; a crash after the save and before the append merely leaves a gap, which the
job does not mind.  Windows older than the job's 3-hour lookback (plus a margin) are
dropped from the book: no record for them can be created any more, because windows follow
the wall clock.

On-disk format (``metering-sequences.json`` in the first log dir), UTF-8 JSON, replaced
atomically (write a temporary file, fsync, rename, fsync the directory)::

    {"version": 1, "next": {"<window_start ms>": <next sequence>, ...}}
"""

from __future__ import annotations

import json
import os
from pathlib import Path

SEQUENCE_FILE = "metering-sequences.json"
BOOK_VERSION = 1
# The job's lookback is 3 hours; a window is kept an hour longer than that.
KEEP_WINDOWS_MS = 4 * 3_600_000


class SequenceBook:
    """Next unused sequence per window start.  Not thread-safe."""

    def __init__(self, next_sequences: dict[int, int] | None = None) -> None:
        self._next = dict(next_sequences or {})

    def take(self, window_start: int) -> int:
        """A fresh sequence for ``window_start`` (0, 1, 2, ... within one book)."""
        sequence = self._next.get(window_start, 0)
        self._next[window_start] = sequence + 1
        return sequence

    def prune(self, now_ms: int) -> None:
        """Forget windows that can no longer receive records (older than KEEP_WINDOWS_MS)."""
        self._next = {w: s for w, s in self._next.items() if w >= now_ms - KEEP_WINDOWS_MS}

    def to_json(self) -> bytes:
        return json.dumps({"version": BOOK_VERSION,
                           "next": {str(w): s for w, s in sorted(self._next.items())}}
                          ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> SequenceBook:
        document = json.loads(data)
        if document.get("version") != BOOK_VERSION:
            raise ValueError(f"unknown sequence book version {document.get('version')!r}")
        return cls({int(w): int(s) for w, s in document["next"].items()})


def load_sequence_book(directory: Path) -> SequenceBook:
    """The book saved in ``directory``; an empty one if there is none yet.

    An unreadable file is an error, not an empty book: starting from 0 could reuse an
    identity and make the job drop new usage as a duplicate."""
    path = directory / SEQUENCE_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return SequenceBook()
    return SequenceBook.from_json(data)


def save_sequence_book(directory: Path, book: SequenceBook) -> None:
    """Replace the saved book atomically and durably."""
    write_atomically(directory / SEQUENCE_FILE, book.to_json())


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data``: a reader (or a restart after a crash) sees the old
    content or the new, never a torn one."""
    temporary = path.with_suffix(".tmp")
    with open(temporary, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    directory_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory_fd)
    finally:
        os.close(directory_fd)
