"""scripts/supervise.py, `make run`'s supervisor: Procfile parsing, stop order, and real child
processes stopped last-first, each given its grace period before SIGKILL."""

from __future__ import annotations

import importlib.util
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.services import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "supervise.py"
_spec = importlib.util.spec_from_file_location("supervise", SCRIPT)
assert _spec is not None and _spec.loader is not None
supervise = importlib.util.module_from_spec(_spec)
sys.modules["supervise"] = supervise  # dataclasses look their module up there
_spec.loader.exec_module(supervise)


def test_procfile_lines_in_order_without_comments() -> None:
    text = "# comment\nzookeeper: scripts/zookeeper.sh 2181 var/zk\n\nbroker1: brokerd serve --a b:c\n"
    assert supervise.parse_procfile(text) == [
        ("zookeeper", "scripts/zookeeper.sh 2181 var/zk"), ("broker1", "brokerd serve --a b:c")]


@pytest.mark.parametrize("text", ["no colon here", "name:", ": cmd", "a: x\na: y"])
def test_bad_procfiles_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        supervise.parse_procfile(text)


def test_last_started_stops_first() -> None:
    assert supervise.stop_order(["zookeeper", "web", "broker1", "broker2"]) == [
        "broker2", "broker1", "web", "zookeeper"]


# A child that needs `delay` seconds to stop after SIGTERM, announcing each step.
SLOW_STOPPER = ("{python} -u -c \"import signal,sys,time; "
                "signal.signal(signal.SIGTERM, lambda *a: (print('{name} stopping', flush=True), "
                "time.sleep({delay}), print('{name} clean', flush=True), sys.exit(0))); "
                "print('{name} up', flush=True); time.sleep(600)\"")


def _run(tmp_path: Path, children: list[tuple[str, float]], grace_s: float
         ) -> tuple[list[str], float]:
    procfile = tmp_path / "Procfile"
    procfile.write_text("".join(
        f"{name}: {SLOW_STOPPER.format(python=sys.executable, name=name, delay=delay)}\n"
        for name, delay in children))
    process = subprocess.Popen([sys.executable, str(SCRIPT), str(procfile), "--grace",
                                str(grace_s)], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    assert process.stdout is not None
    lines: list[str] = []
    while sum("up" in line for line in lines) < len(children):
        assert time.monotonic() < deadline, lines
        lines.append(process.stdout.readline())
    started = time.monotonic()
    process.send_signal(signal.SIGINT)
    rest, _ = process.communicate(timeout=60)
    return lines + rest.splitlines(), time.monotonic() - started


def test_children_stop_last_first_with_their_output_shown(tmp_path: Path) -> None:
    lines, _ = _run(tmp_path, [("first", 0.2), ("second", 0.2)], grace_s=10)
    said = [line.split("| ", 1)[1].strip() for line in lines if "| " in line]
    assert said.index("second clean") < said.index("first stopping")
    assert any(line.split()[1] == "first" and line.endswith("first clean") for line in lines)
    assert "first stopped (rc=0)" in " ".join(said)


def test_a_slow_clean_shutdown_gets_more_than_honchos_5_s(tmp_path: Path) -> None:
    lines, _ = _run(tmp_path, [("slow", 6.0)], grace_s=20)
    text = "\n".join(lines)
    assert "slow clean" in text and "SIGKILL" not in text
    assert "slow stopped (rc=0)" in text


def test_a_child_past_its_grace_is_killed(tmp_path: Path) -> None:
    lines, elapsed = _run(tmp_path, [("stuck", 30.0)], grace_s=0.5)
    text = "\n".join(lines)
    assert "sending SIGKILL" in text and "stuck clean" not in text
    assert elapsed < 20  # hang guard only


def test_await_zookeeper_keeps_the_commands_stderr(zookeeper_address: str) -> None:
    """The broker logs to stderr: `make run` showed none of it while the wait script's
    ``exec 3<>/dev/tcp/… 2>/dev/null`` also redirected the shell's (and so the exec'd
    command's) stderr for good."""
    port = zookeeper_address.rsplit(":", 1)[1]
    done = subprocess.run([str(REPO_ROOT / "scripts" / "await-zookeeper.sh"), port, "sh", "-c",
                           "echo to-stdout; echo to-stderr >&2"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout.strip() == "to-stdout" and done.stderr.strip() == "to-stderr"
