"""The system under test: a private ZooKeeper and one real broker process, on 127.0.0.1.

Both live in one temporary directory (ZooKeeper's data, the broker's log dir and its
output) that :meth:`Cluster.stop` removes.  The broker is started exactly as an operator
would (``python -m brokerd serve …``) or, for profiling, through
:mod:`bench.profiled_broker`, which writes its profile when the broker exits after SIGTERM;
that is why :meth:`Cluster.stop` always stops the broker gracefully first.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from tests.support.services import (
    REPO_ROOT,
    ManagedProcess,
    free_port,
    start_zookeeper,
    wait_for_port,
)

BROKER_START_TIMEOUT_S = 30.0
BROKER_STOP_TIMEOUT_S = 20.0
ZOOKEEPER_CHROOT = "/bench"


@dataclass
class Cluster:
    """A running ZooKeeper + broker pair; ``bootstrap`` is what clients connect to."""

    workdir: Path
    zookeeper: ManagedProcess
    broker: subprocess.Popen[bytes]
    bootstrap: str

    @property
    def broker_pid(self) -> int:
        return self.broker.pid

    @property
    def log_dir(self) -> Path:
        return self.workdir / "logs"

    @property
    def broker_output(self) -> Path:
        return self.workdir / "broker.out"

    @classmethod
    def start(cls, profile_to: Path | None = None, source: Path = REPO_ROOT) -> Cluster:
        """``source``: the checkout whose brokerd runs (``bench/compare_revisions.py``
        starts brokers of two revisions)."""
        workdir = Path(tempfile.mkdtemp(prefix="bench-"))
        zookeeper = start_zookeeper()
        port = free_port()
        if profile_to is None:
            launcher = [sys.executable, "-m", "brokerd"]
        else:
            launcher = [sys.executable, "-m", "bench.profiled_broker", str(profile_to)]
        command = launcher + [
            "serve", "--broker-id", "1",
            "--listeners", f"PLAINTEXT://127.0.0.1:{port}",
            "--zookeeper", zookeeper.address + ZOOKEEPER_CHROOT,
            "--log-dirs", str(workdir / "logs"), "--log-level", "WARNING",
        ]
        with open(workdir / "broker.out", "wb") as output:
            broker = subprocess.Popen(command, cwd=source, stdout=output,
                                      stderr=subprocess.STDOUT)
        cluster = cls(workdir, zookeeper, broker, f"127.0.0.1:{port}")
        try:
            wait_for_port(port, BROKER_START_TIMEOUT_S, broker)
        except Exception:
            cluster.stop()
            raise
        return cluster

    def create_topics(self, names: list[str], timeout_s: float = 20.0) -> None:
        """One partition each: a single producer and a single consumer per topic, so the
        figures are per-partition figures (Kafka's usual unit for such targets)."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        futures = admin.create_topics(
            [NewTopic(name, num_partitions=1, replication_factor=1) for name in names],
            operation_timeout=timeout_s, request_timeout=timeout_s)
        for future in futures.values():
            future.result(timeout=timeout_s)
        self._await_leaders(admin, names, timeout_s)

    def _await_leaders(self, admin: AdminClient, names: list[str], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            topics = admin.list_topics(timeout=timeout_s).topics
            if all(name in topics and topics[name].partitions
                   and topics[name].partitions[0].leader >= 0 for name in names):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"topics {names} have no leader after {timeout_s}s")
            time.sleep(0.1)

    def stop(self) -> None:
        """SIGTERM the broker (SIGKILL if stuck), stop ZooKeeper, delete everything."""
        if self.broker.poll() is None:
            self.broker.send_signal(signal.SIGTERM)
            try:
                self.broker.wait(BROKER_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.broker.kill()
                self.broker.wait()
        self.zookeeper.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)
