"""What opening a broker's logs costs after it was killed: ``python -m bench.crash_restart_load
[--logs N] [--dir DIR] [--rounds R]``.

Creates N empty partition logs (the idle partitions of a dense broker) the way a broker
does, then drops the log manager without closing it, so the clean-shutdown marker is
missing and every active segment's two indexes are still preallocated, as after kill -9.
Then a fresh :class:`~brokerd.storage.manager.LogManager` loads them, as the restarted
broker does before it serves.  Prints, per round, milliseconds of wall time and of this
process's CPU per log.  The directory defaults to one under the working directory, so the
figure is for the disk the broker's logs would be on (``/dev/shm`` would hide read-ahead).
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import tempfile
import time
from pathlib import Path

from brokerd.storage import LogConfig
from brokerd.storage.manager import LogManager


def crashed_logs(root: Path, count: int, config: LogConfig) -> None:
    """``count`` empty logs under ``root`` left as a killed broker leaves them."""
    manager = LogManager([root], config)
    manager.load()
    for partition in range(count):
        manager.get_or_create("idle", partition, config)
    manager.checkpoint()


def load_ms_per_log(root: Path, count: int, config: LogConfig) -> dict[str, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    LogManager([root], config).load()
    return {"wall_ms_per_log": round((time.perf_counter() - wall) * 1000 / count, 3),
            "cpu_ms_per_log": round((time.process_time() - cpu) * 1000 / count, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # one "recovering …" line per log otherwise
    config = LogConfig()
    for round_ in range(args.rounds):
        root = Path(tempfile.mkdtemp(prefix="crash-restart-", dir=args.dir))
        try:
            crashed_logs(root, args.logs, config)
            print(json.dumps({"round": round_, "logs": args.logs,
                              **load_ms_per_log(root, args.logs, config)}))
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
