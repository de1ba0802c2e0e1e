"""Hostile and broken input against a live broker: each bad connection is closed alone, with
a log line naming its peer; per-IP limits and idle reaping; and a fuzz run of thousands of
random and mutated frames while a well-behaved producer keeps producing."""

from __future__ import annotations

import random
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from brokerd.protocol import ApiKey, ErrorCode, encode_request
from brokerd.protocol.records import BATCH_HEADER_SIZE, build_batch
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient
from tests.integration.brokerd.tenancy_fixtures import SecureBroker, start_secure_broker

MAX_REQUEST_BYTES = 64 * 1024


def _closed(sock: socket.socket, timeout: float = 3.0) -> bool:
    """Whether the broker closes ``sock`` within ``timeout`` (reading whatever it sent)."""
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
    except ConnectionError:
        pass
    except TimeoutError:
        return False
    return True


def _peer_logged(broker: BrokerProcess, sock: socket.socket, reason: str) -> bool:
    host, port = sock.getsockname()[:2]
    local = f"{host}:{port}"
    return any(local in line and reason in line for line in broker.output().splitlines())


def _still_serving(broker: BrokerProcess) -> None:
    client = WireClient(broker.port)
    assert client.request(ApiKey.API_VERSIONS, 3, {})["error_code"] == 0
    client.close()


def _truncated(frame: bytes) -> bytes:
    """The frame without its last 3 bytes, its size saying so: framing fine, body short."""
    body = frame[4:-3]
    return struct.pack(">i", len(body)) + body


@pytest.fixture
def small_broker(start_broker: Callable[..., BrokerProcess]) -> BrokerProcess:
    return start_broker(**{"socket_request_max_bytes": str(MAX_REQUEST_BYTES),
                           "max_connections_per_ip": "40"})


def _raw_header(api_key: int, version: int) -> bytes:
    body = struct.pack(">hhih", api_key, version, 1, 1) + b"x"
    return struct.pack(">i", len(body)) + body


def test_oversized_garbage_truncated_and_unsupported_frames_close_only_their_connection(
        small_broker: BrokerProcess) -> None:
    bystander = WireClient(small_broker.port)
    cases = [
        ("oversized", struct.pack(">i", MAX_REQUEST_BYTES + 1), "outside"),
        ("negative", struct.pack(">i", -5), "outside"),
        ("garbage", struct.pack(">i", 12) + b"\xff" * 12, "malformed request"),
        # A version the codec cannot read (one it reads but the broker does not serve gets
        # UNSUPPORTED_VERSION in its own response instead: test_protocol_floor).
        ("unknown version", _raw_header(ApiKey.PRODUCE, 99), "unsupported api_key=0"),
        ("truncated body", _truncated(encode_request(ApiKey.METADATA, 9, 1, "x", {
            "topics": [{"name": "abc"}]})), "malformed request"),
    ]
    for label, frame, reason in cases:
        sock = socket.create_connection(("127.0.0.1", small_broker.port))
        sock.sendall(frame)
        assert _closed(sock), label
        assert _peer_logged(small_broker, sock, reason), label
        sock.close()
    assert bystander.request(ApiKey.API_VERSIONS, 3, {})["error_code"] == 0
    bystander.close()


def test_corrupt_batch_gets_corrupt_message_and_is_not_stored(
        small_broker: BrokerProcess) -> None:
    client = WireClient(small_broker.port, timeout=20)
    assert client.request(ApiKey.CREATE_TOPICS, 7, {"timeout_ms": 15000, "topics": [
        {"name": "t", "num_partitions": 1, "replication_factor": 1}]})["topics"][0][
            "error_code"] == 0
    batch = bytearray(build_batch([(None, b"payload", [], 1_700_000_000_000)]))
    batch[BATCH_HEADER_SIZE + 2] ^= 0xFF  # flip a record byte: the CRC no longer matches
    answer = client.request(ApiKey.PRODUCE, 9, {"acks": 1, "timeout_ms": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": bytes(batch)}]}]})
    error = answer["responses"][0]["partition_responses"][0]["error_code"]
    assert error == ErrorCode.CORRUPT_MESSAGE
    offsets = client.request(ApiKey.LIST_OFFSETS, 7, {"replica_id": -1, "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    assert offsets["topics"][0]["partitions"][0]["offset"] == 0
    client.close()


def test_connections_per_ip_are_limited_and_idle_ones_reaped(
        start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker(**{"max_connections_per_ip": "3", "connections_max_idle_ms": "1000"})
    time.sleep(0.2)  # the readiness probe's connection is released
    clients = [WireClient(broker.port) for _ in range(3)]
    for client in clients:
        assert client.request(ApiKey.API_VERSIONS, 3, {})["error_code"] == 0
    extra = socket.create_connection(("127.0.0.1", broker.port))
    assert _closed(extra)
    assert _peer_logged(broker, extra, "max.connections.per.ip")
    extra.close()
    assert all(_closed(client.sock, timeout=4.0) for client in clients)  # idle reaping
    assert "idle for longer than connections.max.idle.ms" in broker.output()
    _still_serving(broker)


def _random_frame(rng: random.Random, valid: list[bytes]) -> bytes:
    """A random frame, a valid request with bytes flipped, cut short or its header changed."""
    kind = rng.randrange(4)
    if kind == 0:
        body = rng.randbytes(rng.randrange(0, 300))
        return struct.pack(">i", len(body)) + body
    frame = bytearray(rng.choice(valid))
    if kind == 1:
        for _ in range(rng.randrange(1, 6)):
            position = rng.randrange(4, len(frame))
            frame[position] = rng.randrange(256)
    elif kind == 2:
        cut = rng.randrange(5, len(frame))
        frame = frame[:cut]
        frame[:4] = struct.pack(">i", cut - 4)
    else:
        frame[6:8] = struct.pack(">h", rng.choice([-1, 99, 0x7FFF, rng.randrange(20)]))
    return bytes(frame)


def _fuzz(port: int, stop: threading.Event, sent: list[int], seed: int) -> None:
    rng = random.Random(seed)
    records = build_batch([(b"k", b"v" * 40, [], 1_700_000_000_000)])
    valid = [
        encode_request(ApiKey.METADATA, 12, 1, "fuzz", {"topics": [{"name": "fuzzed"}]}),
        encode_request(ApiKey.PRODUCE, 9, 2, "fuzz", {"acks": 1, "timeout_ms": 100,
                       "topic_data": [{"name": "good", "partition_data": [
                           {"index": 0, "records": records}]}]}),
        encode_request(ApiKey.FETCH, 12, 3, "fuzz", {"max_wait_ms": 0, "topics": [
            {"topic": "good", "partitions": [{"partition": 0, "fetch_offset": 0,
                                              "partition_max_bytes": 1024}]}]}),
        encode_request(ApiKey.API_VERSIONS, 3, 4, "fuzz", {}),
        encode_request(ApiKey.LIST_OFFSETS, 7, 5, "fuzz", {"replica_id": -1, "topics": []}),
        encode_request(ApiKey.SASL_HANDSHAKE, 1, 6, "fuzz", {"mechanism": "SCRAM-SHA-256"}),
        encode_request(ApiKey.SASL_AUTHENTICATE, 2, 7, "fuzz", {
            "auth_bytes": b"n,,n=someone,r=0123456789abcdef"}),
    ]
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                for _ in range(rng.randrange(1, 20)):
                    sock.sendall(_random_frame(rng, valid))
                    sent[0] += 1
                sock.settimeout(0.05)
                try:
                    sock.recv(65536)
                except (TimeoutError, OSError):
                    pass
        except OSError:
            pass  # the broker closed us mid-send: expected for bad frames


@pytest.fixture
def fuzz_target(zk_connect: str, tmp_path: Path) -> Iterator[SecureBroker]:
    secure = start_secure_broker(zk_connect, tmp_path, **{"socket.request.max.bytes": "1048576"})
    yield secure
    secure.stop()


def test_fuzzed_frames_do_not_disturb_a_well_behaved_producer(fuzz_target: SecureBroker
                                                               ) -> None:
    from confluent_kafka import Consumer, Producer

    secure = fuzz_target
    broker = secure.process
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 2})
    acknowledged: list[bytes] = []
    errors: list[object] = []

    def delivered(err: object, message: object) -> None:
        if err is None:
            acknowledged.append(message.value())  # type: ignore[attr-defined]
        else:
            errors.append(err)

    producer.produce("good", b"warm-up", on_delivery=delivered)
    assert producer.flush(10) == 0
    stop = threading.Event()
    sent = [0]
    # Half the fuzzers hit the operator listener, half the SASL one (before any login).
    fuzzers = [threading.Thread(target=_fuzz, args=(port, stop, sent, seed))
               for seed, port in enumerate([broker.port, secure.sasl_port] * 2)]
    for fuzzer in fuzzers:
        fuzzer.start()
    deadline = time.monotonic() + 6
    index = 0
    while time.monotonic() < deadline or sent[0] < 3000:
        producer.produce("good", f"message-{index}".encode(), on_delivery=delivered)
        producer.poll(0)
        index += 1
        time.sleep(0.002)
        if time.monotonic() > deadline + 30:
            break
    stop.set()
    for fuzzer in fuzzers:
        fuzzer.join()
    assert producer.flush(15) == 0
    assert sent[0] >= 3000 and errors == []
    assert broker.process is not None and broker.process.poll() is None
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "check",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["good"])
    stored: set[bytes | None] = set()
    wanted = set(acknowledged)
    until = time.monotonic() + 30
    while not wanted <= stored and time.monotonic() < until:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            stored.add(message.value())
    consumer.close()
    assert wanted <= stored, f"{len(wanted - stored)} acknowledged messages missing"
    _still_serving(broker)
    assert "request from" not in broker.output()  # no handler crashed on any frame
