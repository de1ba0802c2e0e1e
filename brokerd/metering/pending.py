"""Records numbered but not yet committed to ``__usage``, kept across a clean shutdown.

Why: at shutdown the final flush may be unable to append (``__usage`` not created yet, its
partition led elsewhere, the log refusing).  Dropping those records would lose usage;
keeping them in a file and re-sending them after the restart loses nothing, and because a
record keeps its ``(broker_id, window_start, sequence)`` and value, a copy that did reach
``__usage`` before is deduplicated by the job.

On-disk format (``metering-pending.json`` in the first log dir), UTF-8 JSON, replaced
atomically like the sequence book; the file is removed once every record in it is
committed::

    {"version": 1, "records": [{"tenant": "acme", "window_start": 1791118920000,
                                "sequence": 0, "value": "<the record's JSON value>"}]}
"""

from __future__ import annotations

import json
from pathlib import Path

from brokerd.metering.sequences import write_atomically
from brokerd.metering.usage import UsageRecord

PENDING_FILE = "metering-pending.json"
PENDING_VERSION = 1


def save_pending(directory: Path, records: list[UsageRecord]) -> None:
    """Keep ``records`` for the next start (none: remove the file)."""
    path = directory / PENDING_FILE
    if not records:
        path.unlink(missing_ok=True)
        return
    write_atomically(path, json.dumps({"version": PENDING_VERSION, "records": [
        {"tenant": r.tenant, "window_start": r.window_start, "sequence": r.sequence,
         "value": r.value.decode()} for r in records]}).encode())


def load_pending(directory: Path) -> list[UsageRecord]:
    """The records a previous run left; an unreadable file is an error (it holds usage)."""
    try:
        document = json.loads((directory / PENDING_FILE).read_bytes())
    except FileNotFoundError:
        return []
    if document.get("version") != PENDING_VERSION:
        raise ValueError(f"unknown pending usage version {document.get('version')!r}")
    return [UsageRecord(r["tenant"], int(r["window_start"]), int(r["sequence"]),
                        r["value"].encode()) for r in document["records"]]
