"""The same work as the density benchmark's default-client path, done by the peers this
machine runs: NATS JetStream and Redis Streams.  ``python -m bench.peers [--quick]``
prints one JSON object; :mod:`bench.density` prints each figure beside ours as a ratio.

Work, per peer: 1 KiB messages published at a fixed 2,000/s, end-to-end latency from just
before the publish to the subscriber receiving it (the stamp of
:mod:`bench.latency_client`), p50/p99/max; then the highest publish throughput of 1 KiB
messages, every one acknowledged by the server.  Each peer runs in its durable mode:

* JetStream: a file-storage stream.  One server, so ``num_replicas=1`` (a replicated
  stream needs a three-server cluster this 2-core machine does not run beside three
  brokers); the publisher waits for every PubAck (stored), up to nats-py's 4,000 in flight;
  the subscriber is an ordered push consumer (no per-message acks, like a Kafka consumer).
  JetStream, like our broker and Kafka, does not fsync each message (``sync_interval``).
* Redis Streams: XADD, read with XREAD BLOCK; persistence is whatever the server is
  configured with (reported: ``appendonly``/``appendfsync``; a private server runs with
  the AOF and ``everysec``).  ``WAIT`` for replication is unavailable: one server, no
  replicas.  Throughput pipelines 1,000 XADDs per round trip (as a Kafka producer batches).

Servers: the ones already answering on 127.0.0.1:4222 (with JetStream) and 6379 are used;
otherwise a private ``nats-server -js`` / ``redis-server`` on a free port with a temporary
directory is started and always stopped and removed.  Streams this run creates are
deleted.  Both clients are asyncio, publisher and subscriber in one process (ours run as
two processes), so the client's own CPU is shared: a handicap for the peers, if any.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import nats
import redis.asyncio as aioredis
from nats.js.api import StorageType

from bench.latency_client import WARM_UP_STAMP, read_stamp, stamped_payload, summarise
from tests.support.services import ManagedProcess, free_port, redis_answers, wait_for_port

NATS_URL = "nats://127.0.0.1:4222"
REDIS_URL = "redis://127.0.0.1:6379/0"
NATS_SERVER = "/usr/sbin/nats-server"
TICK_S = 0.001
PIPELINE = 1_000
# Extra seconds for the subscriber to drain after the paced publisher finished.
DRAIN_S = 10.0


def nats_jetstream_answers(host: str = "127.0.0.1", port: int = 4222) -> bool:
    """A NATS server answers there and its INFO says JetStream is enabled."""
    try:
        with socket.create_connection((host, port), timeout=1) as sock:
            info = sock.recv(4096)
    except OSError:
        return False
    return info.startswith(b"INFO ") and b'"jetstream":true' in info


def start_private(name: str, command: Callable[[int, Path], list[str]], url: str
                  ) -> ManagedProcess:
    """Start ``command(port, workdir)`` on a free loopback port with a fresh temp dir and
    wait until it listens; on failure nothing is left behind.  ``url`` has a ``{port}``."""
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
    port = free_port()
    process = subprocess.Popen(command(port, workdir), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_port(port, 20, process)
    except BaseException:
        ManagedProcess(process, workdir, "").stop()
        raise
    return ManagedProcess(process, workdir, url.format(port=port))


def start_nats() -> ManagedProcess:
    """A private ``nats-server -js`` storing in its temp dir."""
    return start_private("nats", lambda port, workdir: [
        NATS_SERVER, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(workdir)],
        "nats://127.0.0.1:{port}")


def start_redis_aof() -> ManagedProcess:
    """A private ``redis-server`` in its durable mode (AOF, fsync every second, Redis'
    recommended setting), writing to its temp dir."""
    return start_private("redis", lambda port, workdir: [
        "redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "",
        "--appendonly", "yes", "--appendfsync", "everysec", "--dir", str(workdir)],
        "redis://127.0.0.1:{port}/0")


async def paced(publish: Callable[[bytes], Awaitable[Any]], size: int, rate: int,
                seconds: float) -> int:
    """Publish ``rate * seconds`` stamped payloads at a fixed rate (a late tick catches up,
    as :func:`bench.latency_client.produce` does); return how many were published."""
    total = int(rate * seconds)
    started = time.perf_counter()
    sent = 0
    while sent < total and time.perf_counter() - started < seconds + DRAIN_S:
        due = min(total, int(rate * (time.perf_counter() - started)))
        while sent < due:
            await publish(stamped_payload(time.time_ns(), size))
            sent += 1
        await asyncio.sleep(TICK_S)
    return sent


def collect(latencies_ms: list[float], expected: int, done: asyncio.Event,
            payload: bytes) -> None:
    """Record one received payload's latency; set ``done`` when all arrived."""
    stamp = read_stamp(payload)
    if stamp != WARM_UP_STAMP:
        latencies_ms.append((time.time_ns() - stamp) / 1e6)
        if len(latencies_ms) >= expected:
            done.set()


async def wait_drained(done: asyncio.Event) -> None:
    try:
        await asyncio.wait_for(done.wait(), DRAIN_S)
    except TimeoutError:
        pass  # reported: fewer records than sent


# ---- NATS JetStream ---------------------------------------------------------------------

async def jetstream(url: str, size: int, rate: int, seconds: float, records: int,
                    max_seconds: float) -> dict[str, Any]:
    """Latency at ``rate``, then throughput of ``records`` (at most ``max_seconds``), each
    in its own file-storage stream, deleted afterwards."""
    nc = await nats.connect(url, connect_timeout=5)
    js = nc.jetstream()
    name = f"BENCH_{uuid.uuid4().hex[:8]}"
    try:
        await js.add_stream(name=name, subjects=[f"{name}.*"], storage=StorageType.FILE,
                            num_replicas=1)
        latencies: list[float] = []
        done = asyncio.Event()
        expected = int(rate * seconds)

        async def on_message(message: Any) -> None:
            collect(latencies, expected, done, message.data)

        subscription = await js.subscribe(f"{name}.latency", cb=on_message,
                                          ordered_consumer=True)
        await js.publish(f"{name}.latency", stamped_payload(WARM_UP_STAMP, size))
        sent = await paced(lambda p: js.publish_async(f"{name}.latency", p), size, rate,
                           seconds)
        await asyncio.wait_for(js.publish_async_completed(), DRAIN_S)
        await wait_drained(done)
        await subscription.unsubscribe()
        payload = b"x" * size
        started = time.perf_counter()
        published = 0
        while published < records and time.perf_counter() - started < max_seconds:
            await js.publish_async(f"{name}.throughput", payload)
            published += 1
        await asyncio.wait_for(js.publish_async_completed(), 30)
        elapsed = time.perf_counter() - started
        info = await js.stream_info(name)
        return {"server": url, "storage": "file", "replicas": 1, "sent": sent,
                "latency": summarise(latencies),
                "throughput": throughput_figures(published, size, elapsed),
                "stored": info.state.messages}
    finally:
        try:
            await js.delete_stream(name)
        finally:
            await nc.close()


# ---- Redis Streams ----------------------------------------------------------------------

async def redis_streams(url: str, size: int, rate: int, seconds: float, records: int,
                        max_seconds: float) -> dict[str, Any]:
    """Latency at ``rate`` (XADD, XREAD BLOCK), then pipelined XADD throughput; the
    streams are deleted afterwards."""
    client = aioredis.Redis.from_url(url, socket_timeout=30)
    key = f"bench-{uuid.uuid4().hex[:8]}"
    try:
        config = await client.config_get("append*")
        replicas = int((await client.info("replication")).get("connected_slaves", 0))
        latencies: list[float] = []
        done = asyncio.Event()
        expected = int(rate * seconds)
        await client.xadd(f"{key}-latency", {"v": stamped_payload(WARM_UP_STAMP, size)})

        async def subscribe() -> None:
            last = "$"
            while not done.is_set():
                answer: Any = await client.xread({f"{key}-latency": last}, count=1000,
                                                 block=200)
                for _, entries in answer:
                    for entry_id, fields in entries:
                        last = entry_id
                        collect(latencies, expected, done, fields[b"v"])

        reader = asyncio.create_task(subscribe())
        await asyncio.sleep(0.2)  # the first XREAD BLOCK is waiting before publishing
        sent = await paced(lambda p: client.xadd(f"{key}-latency", {"v": p}), size, rate,
                           seconds)
        await wait_drained(done)
        done.set()
        await asyncio.wait_for(reader, 5)
        payload = b"x" * size
        started = time.perf_counter()
        published = 0
        while published < records and time.perf_counter() - started < max_seconds:
            pipe = client.pipeline(transaction=False)
            for _ in range(min(PIPELINE, records - published)):
                pipe.xadd(f"{key}-throughput", {"v": payload})
            published += len(await pipe.execute())
        elapsed = time.perf_counter() - started
        return {"server": url, "appendonly": config.get("appendonly"),
                "appendfsync": config.get("appendfsync"), "replicas": replicas,
                "wait": "unavailable (no replicas)" if not replicas else "not used",
                "sent": sent, "latency": summarise(latencies),
                "throughput": throughput_figures(published, size, elapsed)}
    finally:
        await client.delete(f"{key}-latency", f"{key}-throughput")
        await client.aclose()


def throughput_figures(messages: int, size: int, seconds: float) -> dict[str, Any]:
    return {"messages": messages, "seconds": round(seconds, 2),
            "messages_per_second": round(messages / seconds),
            "mb_per_second": round(messages * size / seconds / 1e6, 1)}


def run(size: int = 1024, rate: int = 2_000, seconds: float = 10.0,
        records: int = 300_000, max_seconds: float = 10.0) -> dict[str, Any]:
    """Both peers, each started privately when none answers; a failed peer is reported
    as ``{"error": …}`` and the other still runs."""
    results: dict[str, Any] = {}
    work = (size, rate, seconds, records, max_seconds)
    with ExitStack() as stack:
        for label, answers, default, start, measure in (
                ("nats_jetstream", nats_jetstream_answers, NATS_URL, start_nats, jetstream),
                ("redis_streams", lambda: redis_answers(REDIS_URL), REDIS_URL,
                 start_redis_aof, redis_streams)):
            try:
                url = default
                private = not answers()
                if private:
                    server = start()
                    stack.callback(server.stop)
                    url = server.address
                bound = seconds + max_seconds + 3 * DRAIN_S + 30
                results[label] = {**asyncio.run(asyncio.wait_for(measure(url, *work), bound)),
                                  "private_server": private}
            except Exception as exc:  # noqa: BLE001 - reported, the other peer still runs
                results[label] = {"error": f"{type(exc).__name__}: {exc}"}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.peers", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 s of latency, 30,000 messages")
    args = parser.parse_args(argv)
    figures = (run(seconds=2.0, records=30_000, max_seconds=3.0) if args.quick else run())
    print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
