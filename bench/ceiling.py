"""This machine's own ceiling, measured without a broker, for the ratios in the report.

* Loopback TCP: one thread ``sendall``s 1 MiB chunks, another ``recv_into``s them, over
  127.0.0.1 — the most a Python process can push through the same kernel path the
  clients use.  Both calls release the GIL, so the two threads run on both cores.
* Sequential file writes of the same volume in 1 MiB chunks into the broker's log
  filesystem: once into the page cache only (what the broker does: it leaves fsync to
  the OS, ``flush.ms`` = infinity) and once followed by an ``fsync`` (the disk itself).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

from bench.measure import megabytes_per_second

CHUNK = 1024 * 1024


def loopback_mb_per_second(nbytes: int) -> float:
    """Push ``nbytes`` from one socket to another over 127.0.0.1; MB/s at the receiver."""
    chunk = os.urandom(CHUNK)
    with socket.create_server(("127.0.0.1", 0)) as server:
        sender = socket.create_connection(server.getsockname())
        receiver, _ = server.accept()

    def send_all() -> None:
        with sender:
            remaining = nbytes
            while remaining > 0:
                remaining -= CHUNK
                sender.sendall(chunk if remaining >= 0 else chunk[:remaining + CHUNK])

    with receiver:
        buffer = bytearray(CHUNK)
        started = time.perf_counter()
        thread = threading.Thread(target=send_all)
        thread.start()
        received = 0
        while received < nbytes:
            count = receiver.recv_into(buffer)
            if count == 0:
                break
            received += count
        seconds = time.perf_counter() - started
        thread.join()
    return megabytes_per_second(received, seconds)


def file_write_mb_per_second(directory: Path, nbytes: int, fsync: bool) -> float:
    """Write ``nbytes`` sequentially to a new file in ``directory`` (deleted afterwards)."""
    chunk = os.urandom(CHUNK)
    path = directory / "ceiling-write.tmp"
    started = time.perf_counter()
    with open(path, "wb", buffering=0) as file:
        written = 0
        while written < nbytes:
            written += file.write(chunk[: min(CHUNK, nbytes - written)])
        if fsync:
            os.fsync(file.fileno())
    seconds = time.perf_counter() - started
    path.unlink()
    return megabytes_per_second(written, seconds)


def measure(directory: Path, nbytes: int) -> dict[str, float]:
    return {
        "bytes": nbytes,
        "loopback_tcp_mb_per_second": round(loopback_mb_per_second(nbytes), 1),
        "file_write_mb_per_second": round(file_write_mb_per_second(directory, nbytes, False), 1),
        "file_write_fsync_mb_per_second": round(
            file_write_mb_per_second(directory, nbytes, True), 1),
    }
