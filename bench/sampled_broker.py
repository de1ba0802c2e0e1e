"""``python -m bench.sampled_broker OUT serve …``: brokerd's command line with a CPU-time
sampling profiler, writing collapsed stacks (``frame;frame;… count`` lines) to OUT when the
broker exits (and every few seconds before).

Why not py-spy or cProfile for CPU per request: py-spy samples wall-clock time while a
thread is runnable, so on a loaded machine every preemption is charged to whatever line
was running (a socket write that wakes the peer looks expensive); cProfile's per-call
overhead inflates call-heavy code several times over.  Here ``setitimer(ITIMER_PROF)``
fires every ``BENCH_SAMPLE_US`` (default 1,000) microseconds of *CPU* time the process
used, and the handler records the main thread's stack (the event loop's: every request
is served there).  Time inside a C call is charged to the Python line that made it.
With ``BENCH_SAMPLE_BY_SECOND=1`` each stack starts with the wall-clock second it was
sampled in (``s1795586300;…``), to pick out a window such as a failover.
With ``BENCH_SAMPLE_STALLS_MS=N`` the stack is also recorded every 10 ms of wall time
(``ITIMER_REAL``) while the event loop has not run a heartbeat callback for more than N ms,
as ``stall;…`` lines: what blocks the loop, which CPU samples alone cannot tell apart from
many short steps.
"""

from __future__ import annotations

import asyncio
import collections
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

import uvloop

from brokerd.__main__ import main as brokerd_main

SAMPLES: collections.Counter[str] = collections.Counter()
DUMP_INTERVAL_S = 5.0


def _stack(frame: FrameType | None) -> str:
    names = []
    while frame is not None:
        code = frame.f_code
        names.append(f"{code.co_name} ({code.co_filename.rsplit('/', 2)[-1]}:{frame.f_lineno})")
        frame = frame.f_back
    return ";".join(reversed(names))


def _sample(_signum: int, frame: FrameType | None) -> None:
    SAMPLES[_stack(frame)] += 1


def _sample_by_second(_signum: int, frame: FrameType | None) -> None:
    SAMPLES[f"s{int(time.time())};{_stack(frame)}"] += 1


STALL_POLL_S = 0.01
_last_beat = time.monotonic()


def _beat(loop: asyncio.AbstractEventLoop) -> None:
    global _last_beat
    _last_beat = time.monotonic()
    loop.call_later(STALL_POLL_S, _beat, loop)


def _with_heartbeat(run: Callable[..., Any]) -> Callable[..., Any]:
    """``uvloop.run`` whose loop runs :func:`_beat` from its start."""
    def run_beating(main: Any, **kwargs: Any) -> Any:
        def new_loop() -> asyncio.AbstractEventLoop:
            loop = uvloop.new_event_loop()
            loop.call_soon(_beat, loop)
            return loop
        return run(main, loop_factory=new_loop, **kwargs)
    return run_beating


def _stall_sampler(threshold_s: float, by_second: bool) -> Callable[[int, FrameType | None], None]:
    """A SIGALRM handler (every :data:`STALL_POLL_S` of wall time) recording the stack
    while the loop's heartbeat is older than ``threshold_s``.  In the main thread, like
    the CPU sampler: another thread walking the main thread's frames crashed the broker."""
    def sample(_signum: int, frame: FrameType | None) -> None:
        if time.monotonic() - _last_beat > threshold_s:
            stack = _stack(frame)
            SAMPLES[f"s{int(time.time())};stall;{stack}" if by_second else f"stall;{stack}"] += 1
    return sample


def main(argv: list[str]) -> int:
    output, *brokerd_args = argv
    interval_s = int(os.environ.get("BENCH_SAMPLE_US", "1000")) / 1e6
    by_second = os.environ.get("BENCH_SAMPLE_BY_SECOND") == "1"
    signal.signal(signal.SIGPROF, _sample_by_second if by_second else _sample)
    signal.setitimer(signal.ITIMER_PROF, interval_s, interval_s)
    if stall_ms := int(os.environ.get("BENCH_SAMPLE_STALLS_MS", "0")):
        uvloop.run = _with_heartbeat(uvloop.run)
        signal.signal(signal.SIGALRM, _stall_sampler(stall_ms / 1000, by_second))
        signal.setitimer(signal.ITIMER_REAL, STALL_POLL_S, STALL_POLL_S)
    threading.Thread(target=_write_every, args=(output, DUMP_INTERVAL_S), daemon=True).start()
    try:
        return brokerd_main(brokerd_args)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        _write(output)


def _write(output: str) -> None:
    samples = dict(SAMPLES)  # one C-level copy: the handler cannot run in the middle of it
    with open(output + ".tmp", "w") as out:
        for stack, count in samples.items():
            out.write(f"{stack} {count}\n")
    os.replace(output + ".tmp", output)


def _write_every(output: str, interval_s: float) -> None:
    """Also while running: a broker stopped with SIGKILL (a slow shutdown at the end of a
    benchmark) still leaves its samples up to the last few seconds."""
    while True:
        time.sleep(interval_s)
        _write(output)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
