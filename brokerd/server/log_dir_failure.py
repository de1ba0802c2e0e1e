"""What a broker does when writing to a log directory fails (a full disk, an I/O error).

Kafka's rule (KIP-112): the directory goes offline, and a broker with no online log
directory left halts at once rather than shutting down cleanly, because a clean shutdown
writes checkpoints and markers to the very disk that failed.  Nothing acknowledged is at
risk: an ``acks=all`` write was acknowledged only once the ISR held it, and the failed
write itself answered KAFKA_STORAGE_ERROR, so the producer retries at the next leader.
Before halting we close the ZooKeeper session: the broker's registration disappears at
once and the controller moves its leaderships now, not a session timeout later.  The next
start recovers the directory (the log's unflushed tail is checked, partial writes cut).

Where this differs from Kafka: with several log directories Kafka keeps serving the
healthy ones and the controller moves only the failed directory's partitions; brokerd
halts on the first failed directory (documented in docs/brokerd.md).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

log = logging.getLogger(__name__)

HALT_EXIT_CODE = 1
SESSION_CLOSE_TIMEOUT_S = 2.0


def halt_process(code: int) -> None:
    """Exit now: no clean shutdown, no checkpoints (only the log lines are flushed)."""
    logging.shutdown()
    os._exit(code)


class LogDirFailureHandler:
    """Takes failed directories offline and halts the broker (see the module's docstring)."""

    def __init__(self, close_session: Callable[[], Awaitable[None]],
                 halt: Callable[[int], None] = halt_process) -> None:
        self.close_session = close_session
        self.halt = halt
        self.offline: set[Path] = set()
        self._halting: asyncio.Task[None] | None = None

    def __call__(self, log_dir: Path, error: OSError) -> None:
        if log_dir not in self.offline:
            self.offline.add(log_dir)
            log.critical("log dir %s is offline: %s", log_dir, error)
        if self._halting is None:
            log.critical("halting: a log dir failed (writes there answer KAFKA_STORAGE_ERROR;"
                         " the controller moves this broker's leaderships)")
            self._halting = asyncio.get_running_loop().create_task(self._halt())

    async def _halt(self) -> None:
        try:
            await asyncio.wait_for(self.close_session(), SESSION_CLOSE_TIMEOUT_S)
        except Exception:
            log.exception("could not close the ZooKeeper session; halting anyway")
        finally:
            self.halt(HALT_EXIT_CODE)
