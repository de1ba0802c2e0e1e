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


def run(megabytes: int, parent: Path) -> None:
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
    print(f"batch {len(template)} bytes x {batches} = {size_mb:.0f} MB")
    print(f"append: {size_mb / append_seconds:8.1f} MB/s  ({batches / append_seconds:.0f} batches/s)")
    print(f"fsync:  {flush_seconds:8.2f} s for the whole log")
    print(f"read:   {size_mb / read_seconds:8.1f} MB/s  (1 MiB fetches, pread)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=512)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    run(args.megabytes, args.dir)


if __name__ == "__main__":
    main()
