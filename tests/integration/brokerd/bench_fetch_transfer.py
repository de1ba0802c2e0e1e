"""Measure Fetch throughput with ``socket.fetch.transfer`` = sendfile vs pread.

Run: ``.venv/bin/python -m tests.integration.brokerd.bench_fetch_transfer`` (needs the
``zookeeper`` Debian package).  For each mode it starts a real broker, produces ~64 MiB
into one partition, then a raw client repeatedly fetches the whole partition (up to
``FETCH_BYTES`` per request) from offset 0 and only counts response bytes, so the figure
is the broker's send path, not a client's decoding.
"""

from __future__ import annotations

import socket
import struct
import tempfile
import time
import uuid
from pathlib import Path

from kazoo.client import KazooClient

from brokerd.protocol import ApiKey, encode_request
from brokerd.protocol.records import build_batch
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient, recv_exactly
from tests.support.services import start_zookeeper

BATCH_RECORDS, RECORD_BYTES, BATCHES = 64, 1024, 1024  # 64 MiB of 64 KiB batches
FETCH_BYTES = 16 << 20
ROUNDS = 40


def fill(port: int) -> None:
    client = WireClient(port)
    client.request(ApiKey.CREATE_TOPICS, 5, {"topics": [
        {"name": "bench", "num_partitions": 1, "replication_factor": 1}], "timeout_ms": 5000})
    batch = build_batch([(None, b"x" * RECORD_BYTES, [], 0)] * BATCH_RECORDS)
    for _ in range(BATCHES // 16):
        client.request(ApiKey.PRODUCE, 9, {"acks": 1, "timeout_ms": 5000, "topic_data": [
            {"name": "bench", "partition_data": [{"index": 0, "records": batch * 16}]}]})
    client.close()


def measure(port: int) -> float:
    """MiB/s of Fetch responses received."""
    body = {"max_wait_ms": 0, "min_bytes": 1, "max_bytes": FETCH_BYTES, "topics": [
        {"topic": "bench", "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": FETCH_BYTES}]}]}
    request = encode_request(ApiKey.FETCH, 12, 1, "bench", body)
    received = 0
    with socket.create_connection(("127.0.0.1", port)) as sock:
        started = time.perf_counter()
        for _ in range(ROUNDS):
            sock.sendall(request)
            (size,) = struct.unpack(">i", recv_exactly(sock, 4))
            remaining = size
            while remaining:
                remaining -= len(sock.recv(min(remaining, 1 << 20)))
            received += size
        elapsed = time.perf_counter() - started
    return received / elapsed / (1 << 20)


def main() -> None:
    zookeeper = start_zookeeper()
    try:
        for mode in ("sendfile", "pread"):
            chroot = f"/bench-{uuid.uuid4().hex[:8]}"
            client = KazooClient(hosts=zookeeper.address)
            client.start()
            client.ensure_path(chroot)
            client.stop()
            with tempfile.TemporaryDirectory() as directory:
                broker = BrokerProcess(zookeeper.address + chroot, Path(directory) / "logs",
                                       properties={"socket.fetch.transfer": mode})
                broker.start()
                try:
                    fill(broker.port)
                    measure(broker.port)  # warm the page cache
                    print(f"{mode:8s} {measure(broker.port):8.0f} MiB/s")
                finally:
                    broker.stop()
    finally:
        zookeeper.stop()


if __name__ == "__main__":
    main()
