"""Real external services for the test suite: ZooKeeper and Redis.

One ZooKeeper (and, when ``REDIS_URL`` does not answer, one private Redis) is started
per test session by the controlling pytest process; xdist workers inherit their
addresses through environment variables.  Each test then works in its own ZooKeeper
chroot, so tests never see each other's znodes.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
ZOOKEEPER_SCRIPT = REPO_ROOT / "scripts" / "zookeeper.sh"


# Ports handed to test processes come from below the kernel's ephemeral range, so no
# outgoing connection can take one as its source port between the moment it is picked
# and the listener's bind (a broker failed to start on "address already in use" that
# way), and each process draws from its own slice of that range, so two xdist workers
# never pick the same one.
LISTEN_PORTS_FROM = 10000
PORTS_PER_PROCESS = 1000
_port_lock = threading.Lock()
_next_ports: Iterator[int] | None = None


def ephemeral_port_range() -> tuple[int, int]:
    """The kernel's range for outgoing connections' source ports (Linux's default if unread)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def port_slice(ephemeral_low: int, worker: str, pid: int) -> tuple[range, int]:
    """This process's listening ports, and the first one to hand out.  Each xdist worker
    ("gw3") has a slice below the ephemeral range, slice 0 is any other process's; the
    first port is chosen by pid, so a benchmark beside the test session rarely meets it."""
    slices = max((ephemeral_low - LISTEN_PORTS_FROM) // PORTS_PER_PROCESS, 1)
    index = int(worker[2:]) + 1 if worker.startswith("gw") and worker[2:].isdigit() else 0
    start = LISTEN_PORTS_FROM + (index % slices) * PORTS_PER_PROCESS
    first = start + pid % PORTS_PER_PROCESS
    return range(start, start + PORTS_PER_PROCESS), first


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now, from this process's own
    slice below the ephemeral range; never the same one twice until the slice wraps."""
    global _next_ports
    with _port_lock:
        if _next_ports is None:
            ports, first = port_slice(ephemeral_port_range()[0],
                                      os.environ.get("PYTEST_XDIST_WORKER", ""), os.getpid())
            _next_ports = itertools.cycle([*range(first, ports.stop), *range(ports.start, first)])
        for _ in range(PORTS_PER_PROCESS):
            port = next(_next_ports)
            if _bindable(port):
                return port
    raise RuntimeError("no free port left in this process's slice")


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
