"""A real ``python -m brokerd serve`` process for integration tests.

Each broker gets a free port, a temporary log dir and the test's own ZooKeeper chroot.
:meth:`BrokerProcess.start` returns once the broker answers an ApiVersions request (not
merely once the port accepts), so tests never race the start-up.
"""

from __future__ import annotations

import signal
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from brokerd.protocol import ApiKey, decode_response, encode_request
from tests.support.services import REPO_ROOT, free_port

START_TIMEOUT_S = 20.0


def api_versions_round_trip(port: int, version: int = 3, timeout: float = 2.0) -> dict:
    """Send one ApiVersions request and return the decoded response body."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(encode_request(ApiKey.API_VERSIONS, version, 1, "probe", {}))
        size = struct.unpack(">i", recv_exactly(sock, 4))[0]
        _, body = decode_response(ApiKey.API_VERSIONS, version, recv_exactly(sock, size))
        return body


class WireClient:
    """A minimal blocking Kafka client built on our codec, for protocol-level tests."""

    def __init__(self, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self._correlation_id = 0

    def send(self, api_key: int, version: int, body: dict) -> int:
        self._correlation_id += 1
        self.sock.sendall(encode_request(api_key, version, self._correlation_id, "wire", body))
        return self._correlation_id

    def receive(self, api_key: int, version: int) -> tuple[int, dict]:
        return decode_response(api_key, version, self.receive_frame())

    def receive_frame(self) -> bytes:
        """The next response frame, undecoded (after its size: correlation id first)."""
        size = struct.unpack(">i", recv_exactly(self.sock, 4))[0]
        return recv_exactly(self.sock, size)

    def request(self, api_key: int, version: int, body: dict) -> dict:
        correlation_id = self.send(api_key, version, body)
        answered, response = self.receive(api_key, version)
        assert answered == correlation_id
        return response

    def close(self) -> None:
        self.sock.close()


def recv_exactly(sock: socket.socket, count: int) -> bytes:
    chunks = []
    while count:
        chunk = sock.recv(count)
        if not chunk:
            raise ConnectionError("peer closed")
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


METRICS_PORT_ATTEMPTS = 3


class MetricsPortTaken(RuntimeError):
    """The broker exited at start because its metrics port was in use."""


@dataclass
class BrokerProcess:
    """One broker process; restartable on the same port and log dir."""

    zk_connect: str
    log_dir: Path
    broker_id: int = 1
    port: int = field(default_factory=free_port)
    metrics_port: int = field(default_factory=free_port)
    properties: dict[str, str] = field(default_factory=dict)
    # More listeners beside PLAINTEXT on ``port`` (which start() probes), e.g. SASL ones.
    extra_listeners: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def output_path(self) -> Path:
        return self.log_dir.parent / f"broker-{self.broker_id}.out"

    def start(self) -> BrokerProcess:
        """Start and wait until it answers.  The metrics port, picked free a while before,
        may have been taken meanwhile by another test's process: then another is picked
        (the Kafka port is kept, clients know it)."""
        for _ in range(METRICS_PORT_ATTEMPTS - 1):
            try:
                return self._start_once()
            except MetricsPortTaken:
                self.metrics_port = free_port()
        return self._start_once()

    def _start_once(self) -> BrokerProcess:
        config = self.log_dir.parent / f"broker-{self.broker_id}.properties"
        earlier_output = len(self.output())
        config.write_text("".join(f"{k}={v}\n" for k, v in self.properties.items()))
        output = open(self.output_path, "ab")  # noqa: SIM115 - owned by the process
        self.process = subprocess.Popen(
            [sys.executable, "-m", "brokerd", "serve", "--broker-id", str(self.broker_id),
             "--listeners", ",".join((f"PLAINTEXT://127.0.0.1:{self.port}",
                                      *self.extra_listeners)), "--zookeeper",
             self.zk_connect, "--log-dirs", str(self.log_dir), "--config", str(config),
             "--metrics-port", str(self.metrics_port)],
            cwd=REPO_ROOT, stdout=output, stderr=subprocess.STDOUT)
        output.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                said = self.output()[earlier_output:]
                if "start_http_server" in said and "Address already in use" in said:
                    raise MetricsPortTaken(said)
                raise RuntimeError(f"broker exited with {self.process.returncode}:\n"
                                   + self.output())
            try:
                api_versions_round_trip(self.port)
                return self
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError("broker did not answer\n" + self.output()) from None
                time.sleep(0.05)

    def stop(self, timeout: float = 10.0) -> float:
        """SIGTERM and wait; returns the seconds the shutdown took."""
        assert self.process is not None
        started = time.monotonic()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout)
        return time.monotonic() - started

    def kill(self) -> None:
        """SIGKILL: an unclean crash (no flush, no clean-shutdown marker)."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def output(self) -> str:
        return self.output_path.read_text(errors="replace") if self.output_path.exists() else ""
