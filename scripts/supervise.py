#!/usr/bin/env python3
"""`make run`'s process supervisor: start a Procfile's processes, show their output, and stop
them in reverse order, each with enough time to shut down cleanly.

Why not honcho (which `make run` used before): honcho SIGTERMs every process at once and
SIGKILLs whatever still runs 5 s later (``honcho.manager.KILL_WAIT``, not configurable).  A
broker's controlled shutdown needs ZooKeeper alive and can take longer than 5 s, so every
stop of `make run` was an unclean one.  Here the processes stop one at a time, last started
first (brokers, then Celery and web, then Redis and ZooKeeper last), each getting
``--grace`` seconds (default 45: more than ``controlled.shutdown.timeout.ms``'s 30 s) between
SIGTERM and SIGKILL.  A second Ctrl-C kills whatever is left at once.

Each process runs in its own session (so the terminal's Ctrl-C reaches only us and we pick
the order) with stdout and stderr merged, and each of its lines is printed as
``HH:MM:SS name | line``.  When any process exits on its own, the rest are stopped too, and
the exit status is that process's (1 if it died of a signal).

Usage: ``supervise.py PROCFILE [--grace SECONDS]``; a Procfile line is ``name: command``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO

DEFAULT_GRACE_S = 45.0


def parse_procfile(text: str) -> list[tuple[str, str]]:
    """``name: command`` lines in order; blank lines and ``#`` comments skipped."""
    entries = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, command = line.partition(":")
        if not sep or not name.strip() or not command.strip():
            raise ValueError(f"Procfile line {number}: expected 'name: command', got {raw!r}")
        entries.append((name.strip(), command.strip()))
    names = [name for name, _ in entries]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate process names in {names}")
    return entries


def stop_order(names: list[str]) -> list[str]:
    """Last started, first stopped: what depends on ZooKeeper stops before ZooKeeper."""
    return list(reversed(names))


def prefixed(name: str, width: int, line: str, now: float) -> str:
    return f"{time.strftime('%H:%M:%S', time.localtime(now))} {name:<{width}} | {line}"


@dataclass
class Child:
    name: str
    command: str
    process: subprocess.Popen[bytes] | None = None
    reader: threading.Thread | None = field(default=None, repr=False)

    def start(self, out: IO[str], width: int, lock: threading.Lock) -> None:
        # ``exec``: the shell becomes the command, so the pid we wait for is the program
        # that handles SIGTERM, not a shell that dies of it while the program shuts down.
        self.process = subprocess.Popen(
            f"exec {self.command}", shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True)
        say(out, lock, prefixed("system", width, f"{self.name} started (pid {self.process.pid})",
                                time.time()))
        self.reader = threading.Thread(target=self._copy, args=(out, width, lock), daemon=True)
        self.reader.start()

    def _copy(self, out: IO[str], width: int, lock: threading.Lock) -> None:
        assert self.process is not None and self.process.stdout is not None
        for raw in self.process.stdout:
            say(out, lock, prefixed(self.name, width,
                                    raw.decode(errors="replace").rstrip("\n"), time.time()))

    def signal_group(self, signum: int) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


def say(out: IO[str], lock: threading.Lock, text: str) -> None:
    with lock:
        out.write(text + "\n")
        out.flush()


class Supervisor:
    def __init__(self, entries: list[tuple[str, str]], grace_s: float,
                 out: IO[str] = sys.stdout) -> None:
        self.children = [Child(name, command) for name, command in entries]
        self.grace_s = grace_s
        self.out = out
        self.lock = threading.Lock()
        self.width = max([len("system"), *(len(name) for name, _ in entries)])
        self.stop_requested = threading.Event()
        self.hurry = threading.Event()

    def log(self, text: str) -> None:
        say(self.out, self.lock, prefixed("system", self.width, text, time.time()))

    def on_signal(self, signum: int, frame: object) -> None:
        if self.stop_requested.is_set():
            self.hurry.set()  # a second Ctrl-C: no more waiting
        self.stop_requested.set()

    def run(self) -> int:
        for child in self.children:
            child.start(self.out, self.width, self.lock)
        exited: Child | None = None
        while not self.stop_requested.is_set():
            exited = next((c for c in self.children if not c.running()), None)
            if exited is not None:
                break
            self.stop_requested.wait(0.2)
        if exited is not None:
            assert exited.process is not None
            self.log(f"{exited.name} exited with {exited.process.returncode}; stopping the rest")
        else:
            self.log("stopping (Ctrl-C again to kill everything at once)")
        self.stop_all()
        if exited is None:
            return 0
        code = exited.process.returncode if exited.process is not None else 1
        return code if code is not None and code >= 0 else 1

    def stop_all(self) -> None:
        by_name = {child.name: child for child in self.children}
        for name in stop_order([child.name for child in self.children]):
            self.stop_one(by_name[name])
        for child in self.children:
            if child.reader is not None:
                child.reader.join(timeout=2)

    def stop_one(self, child: Child) -> None:
        if not child.running():
            child.signal_group(signal.SIGKILL)  # leftovers of an exited shell
            return
        assert child.process is not None
        started = time.monotonic()
        child.signal_group(signal.SIGTERM)
        while child.running() and time.monotonic() - started < self.grace_s:
            if self.hurry.wait(0.1):
                break
        if child.running():
            self.log(f"{child.name} still running after {time.monotonic() - started:.1f} s; "
                     "sending SIGKILL")
            child.signal_group(signal.SIGKILL)
            child.process.wait()
        self.log(f"{child.name} stopped (rc={child.process.returncode}) in "
                 f"{time.monotonic() - started:.1f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("procfile")
    parser.add_argument("--grace", type=float,
                        default=float(os.environ.get("STOP_GRACE_S", DEFAULT_GRACE_S)),
                        help="seconds between SIGTERM and SIGKILL for each process")
    args = parser.parse_args(argv)
    with open(args.procfile, encoding="utf-8") as procfile:
        entries = parse_procfile(procfile.read())
    supervisor = Supervisor(entries, args.grace)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, supervisor.on_signal)
    return supervisor.run()


if __name__ == "__main__":
    sys.exit(main())
