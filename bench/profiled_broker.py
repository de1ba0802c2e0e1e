"""``python -m bench.profiled_broker OUT serve …``: brokerd's command line under cProfile,
writing the profile to OUT when the broker exits (after SIGTERM).

Unlike ``python -m cProfile``, the profiler's clock is the event-loop thread's CPU time
(``time.thread_time``), not the wall clock: on a shared machine a wall-clock profile
charges every preemption to whichever function happened to be running, and idle waits
inside the event loop to ``asyncio.run``.  Only the main thread is profiled, which is the
one that serves every request.
"""

from __future__ import annotations

import cProfile
import sys
import time

from brokerd.__main__ import main as brokerd_main


def main(argv: list[str]) -> int:
    output, *brokerd_args = argv
    profiler = cProfile.Profile(time.thread_time)
    profiler.enable()
    try:
        return brokerd_main(brokerd_args)
    finally:
        profiler.disable()
        profiler.dump_stats(output)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
