"""Micro-benchmark of the partition log: append and read throughput.

Appends 64 KiB batches of 1 KiB records (as a producer with linger would send them)
through ``Log.append_as_leader`` - the full path: validation incl. CRC32C, header
patching, index maintenance, rolls - then reads everything back in 1 MiB fetches with
``FileRegion.read`` (pread; a server using sendfile avoids even that copy).

    .venv/bin/python bench/storage_append.py [--megabytes 512] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from brokerd.protocol.records import RecordInput, build_batch
from brokerd.storage import Log, LogConfig

RECORD_SIZE = 1024
RECORDS_PER_BATCH = 64  # 64 x 1 KiB = a 64 KiB batch
FETCH_BYTES = 1024 * 1024


def run(megabytes: int, parent: Path) -> dict[str, float]:
    """Append ``megabytes`` of batches to a fresh log under ``parent``, read them back, and
    return the figures (MB = 10**6 bytes)."""
    now_ms = int(time.time() * 1000)
    records: list[RecordInput] = [
        (None, bytes([i]) * RECORD_SIZE, [], now_ms) for i in range(RECORDS_PER_BATCH)
    ]
    template = build_batch(records)
    batches = megabytes * 1024 * 1024 // len(template)
    with tempfile.TemporaryDirectory(dir=parent) as directory:
        log = Log(Path(directory) / "bench-0", LogConfig(), clean_shutdown=True)
        buffer = bytearray(template)
        start = time.perf_counter()
        for _ in range(batches):
            log.append_as_leader(memoryview(buffer), leader_epoch=0)
        append_seconds = time.perf_counter() - start
        start = time.perf_counter()
        log.flush()
        flush_seconds = time.perf_counter() - start

        start = time.perf_counter()
        offset, total = 0, 0
        while offset < log.log_end_offset:
            result = log.read(offset, FETCH_BYTES)
            data = result.read()
            total += len(data)
            offset += (len(data) // len(template)) * RECORDS_PER_BATCH
        read_seconds = time.perf_counter() - start
        log.close()

    size_mb = batches * len(template) / 1e6
    assert total == batches * len(template)
    return {
        "batch_bytes": len(template),
        "batches": batches,
        "append_mb_per_second": round(size_mb / append_seconds, 1),
        "append_batches_per_second": round(batches / append_seconds),
        "append_records_per_second": round(batches * RECORDS_PER_BATCH / append_seconds),
        "fsync_seconds": round(flush_seconds, 2),
        "read_mb_per_second": round(size_mb / read_seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=512)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    figures = run(args.megabytes, args.dir)
    size_mb = figures["batches"] * figures["batch_bytes"] / 1e6
    print(f"batch {figures['batch_bytes']} bytes x {figures['batches']} = {size_mb:.0f} MB")
    print(f"append: {figures['append_mb_per_second']:8.1f} MB/s  "
          f"({figures['append_batches_per_second']} batches/s)")
    print(f"fsync:  {figures['fsync_seconds']:8.2f} s for the whole log")
    print(f"read:   {figures['read_mb_per_second']:8.1f} MB/s  (1 MiB fetches, pread)")


if __name__ == "__main__":
    main()
