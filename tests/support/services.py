"""Real external services for the test suite: ZooKeeper and Redis.

One ZooKeeper (and, when ``REDIS_URL`` does not answer, one private Redis) is started
per test session by the controlling pytest process; xdist workers inherit their
addresses through environment variables.  Each test then works in its own ZooKeeper
chroot, so tests never see each other's znodes.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
ZOOKEEPER_SCRIPT = REPO_ROOT / "scripts" / "zookeeper.sh"


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout: float, process: subprocess.Popen[bytes] | None = None) -> None:
    """Block until something accepts connections on 127.0.0.1:port."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


def zookeeper_answers(port: int) -> bool:
    """True once ZooKeeper serves requests (the 'srvr' four-letter word answers)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"srvr")
            return b"Mode:" in sock.recv(4096)
    except OSError:
        return False


@dataclass
class ManagedProcess:
    """A service process the test session owns, with the directory it writes to."""

    process: subprocess.Popen[bytes]
    workdir: Path
    address: str

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_zookeeper(timeout: float = 60.0) -> ManagedProcess:
    """Start a standalone ZooKeeper on a free port with a throw-away data directory."""
    workdir = Path(tempfile.mkdtemp(prefix="test-zookeeper-"))
    port = free_port()
    log = open(workdir / "zookeeper.log", "wb")  # noqa: SIM115 - owned by the process
    process = subprocess.Popen(
        [str(ZOOKEEPER_SCRIPT), str(port), str(workdir / "data")],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    while not zookeeper_answers(port):
        if process.poll() is not None:
            raise RuntimeError((workdir / "zookeeper.log").read_text())
        if time.monotonic() > deadline:
            process.kill()
            raise TimeoutError("ZooKeeper did not start")
        time.sleep(0.2)
    return ManagedProcess(process, workdir, f"127.0.0.1:{port}")


def redis_answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_timeout=1).ping())
    except Exception:
        return False


def start_redis() -> ManagedProcess:
    """Start a private, non-persistent redis-server on a free port."""
    workdir = Path(tempfile.mkdtemp(prefix="test-redis-"))
    port = free_port()
    process = subprocess.Popen(
        [
            "redis-server", "--bind", "127.0.0.1", "--port", str(port),
            "--save", "", "--appendonly", "no", "--dir", str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    wait_for_port(port, 20, process)
    return ManagedProcess(process, workdir, f"redis://127.0.0.1:{port}/0")
