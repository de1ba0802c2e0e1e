"""The peers' work against private servers the benchmark starts itself (the path taken
when nothing answers on the default ports), and that those servers leave nothing behind."""

from __future__ import annotations

import asyncio

import pytest

from bench.peers import jetstream, nats_jetstream_answers, redis_streams, start_nats, start_redis_aof


@pytest.mark.integration
def test_private_jetstream_delivers_every_message_and_is_removed() -> None:
    server = start_nats()
    try:
        port = int(server.address.rsplit(":", 1)[1])
        assert nats_jetstream_answers(port=port)
        figures = asyncio.run(jetstream(server.address, 1024, 200, 1.0, 2_000, 2.0))
    finally:
        server.stop()
    assert figures["latency"]["records"] == 200
    assert figures["throughput"]["messages"] == 2_000
    assert figures["stored"] == 1 + 200 + 2_000  # warm-up, paced, throughput
    assert not server.workdir.exists() and server.process.poll() is not None


@pytest.mark.integration
def test_private_redis_runs_in_its_durable_mode() -> None:
    server = start_redis_aof()
    try:
        figures = asyncio.run(redis_streams(server.address, 1024, 200, 1.0, 2_500, 2.0))
    finally:
        server.stop()
    assert figures["latency"]["records"] == 200
    assert figures["throughput"]["messages"] == 2_500
    assert (figures["appendonly"], figures["appendfsync"]) == ("yes", "everysec")
    assert figures["wait"] == "unavailable (no replicas)"
    assert not server.workdir.exists()
