"""`make run`'s way of running things, for real: scripts/supervise.py over ZooKeeper
(scripts/zookeeper.sh) and a broker started through scripts/await-zookeeper.sh.  The
broker's own log lines reach the supervisor's output, and Ctrl-C stops the broker first —
a controlled shutdown while ZooKeeper still answers, ending with the clean-shutdown marker —
and ZooKeeper last (issue 15, item 11)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.support.services import REPO_ROOT, free_port

pytestmark = pytest.mark.integration


def _wait_for_line(process: subprocess.Popen[str], needle: str, lines: list[str],
                   timeout_s: float) -> None:
    assert process.stdout is not None
    deadline = time.monotonic() + timeout_s
    while not any(needle in line for line in lines):
        assert time.monotonic() < deadline, "\n".join(lines[-40:])
        line = process.stdout.readline()
        if not line:
            raise AssertionError("supervisor ended early:\n" + "\n".join(lines[-40:]))
        lines.append(line.rstrip("\n"))


def test_ctrl_c_stops_the_broker_cleanly_before_zookeeper(tmp_path: Path) -> None:
    zk_port, broker_port = free_port(), free_port()
    logs = tmp_path / "logs"
    procfile = tmp_path / "Procfile"
    procfile.write_text(
        f"zookeeper: scripts/zookeeper.sh {zk_port} {tmp_path / 'zk'}\n"
        f"broker1: scripts/await-zookeeper.sh {zk_port} {sys.executable} -m brokerd serve "
        f"--broker-id 1 --listeners PLAINTEXT://127.0.0.1:{broker_port} "
        f"--zookeeper 127.0.0.1:{zk_port}/run --log-dirs {logs}\n")
    process = subprocess.Popen([sys.executable, "scripts/supervise.py", str(procfile)],
                               cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        _wait_for_line(process, "broker 1 serving on", lines, 90)
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{broker_port}"})
        for i in range(100):
            producer.produce("supervised", b"v%d" % i, timestamp=1_700_000_000_000 + i)
        assert producer.flush(30) == 0
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    lines += rest.splitlines()
    text = "\n".join(lines)
    assert process.returncode == 0, text
    # The broker's own lines, prefixed with its process name (they used to be lost).
    assert any(line.split()[1:3] == ["broker1", "|"] and "INFO brokerd" in line
               for line in lines), text
    assert "SIGKILL" not in text
    said = [line for line in lines if " system " in f" {line}"]
    order = [name for line in said for name in ("broker1", "zookeeper")
             if f"{name} stopped (rc=" in line]
    assert order == ["broker1", "zookeeper"], said
    assert any("broker1 stopped (rc=0)" in line for line in said)  # the JVM says 143
    # (One broker has nobody to hand its leaderships to: the controller says so, through
    # ZooKeeper, which is still up — and then the broker closes its logs cleanly.)
    assert "broker 1 stopped in" in text
    assert (logs / ".kafka_cleanshutdown").exists()
