"""Progress lines for long billing runs, from Spark's status tracker.

A month of usage for many tenants takes minutes; operators watching ``spark-submit``
need to see that tasks advance. A daemon thread prints, every ``interval_s`` seconds and
only when something changed, one line per active stage: ``stage 3: 5/12 tasks``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import TracebackType

from pyspark import SparkContext


def say(message: str) -> None:
    """One progress line on stderr (stdout stays free for callers' output)."""
    print(f"billing: {message}", file=sys.stderr, flush=True)


class StageProgress:
    """Context manager that reports active stages while the block runs."""

    def __init__(self, context: SparkContext, interval_s: float = 10.0,
                 emit: Callable[[str], None] = say) -> None:
        self._tracker = context.statusTracker()
        self._interval_s = interval_s
        self._emit = emit
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="billing-progress",
                                        daemon=True)
        self._last = ""

    def __enter__(self) -> StageProgress:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stopped.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stopped.wait(self._interval_s):
            report = []
            for stage_id in sorted(self._tracker.getActiveStageIds()):
                info = self._tracker.getStageInfo(stage_id)
                if info is not None:
                    report.append(f"stage {stage_id}: {info.numCompletedTasks}/"
                                  f"{info.numTasks} tasks ({info.numActiveTasks} running)")
            line = "; ".join(report)
            if line and line != self._last:
                self._emit(line)
                self._last = line
