"""What a broker does when writing to a log directory fails (a full disk, an I/O error).

Kafka's rules (KIP-112): the directory goes offline — its partitions' logs are dropped,
requests for them answer KAFKA_STORAGE_ERROR, and the controller moves their leadership
and ISR membership to the other replicas while the broker keeps serving its other
directories.  A broker with no online log directory left halts at once rather than
shutting down cleanly, because a clean shutdown writes checkpoints and markers to the
very disks that failed; before halting it closes its ZooKeeper session, so its
registration disappears and the controller moves its leaderships now, not a session
timeout later.  Nothing acknowledged is at risk: an ``acks=all`` write was acknowledged
only once the ISR held it, and the failed write itself answered KAFKA_STORAGE_ERROR, so
the producer retries at the next leader.  A restart (with space freed) recovers the
directory like any unclean shutdown.

How the controller learns which replicas are offline differs from Kafka: Kafka's
controller reads them from LeaderAndIsr responses; here the broker lists them in its own
registration and writes Kafka's ``/log_dir_event_notification`` (see
:meth:`~brokerd.coordination.zk.ZkCoordinator.report_offline_replicas`).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from brokerd.coordination.zk import ZkCoordinator
from brokerd.replication.manager import ReplicaManager
from brokerd.storage import LogManager

log = logging.getLogger(__name__)

HALT_EXIT_CODE = 1
SESSION_CLOSE_TIMEOUT_S = 2.0
PartitionKey = tuple[str, int]


def halt_process(code: int) -> None:
    """Exit now: no clean shutdown, no checkpoints (only the log lines are flushed)."""
    logging.shutdown()
    os._exit(code)


class LogDirFailureHandler:
    """Takes failed directories offline; halts the broker when none is left."""

    def __init__(self, take_offline: Callable[[Path], list[PartitionKey]],
                 online_dirs: Callable[[], list[Path]],
                 report: Callable[[list[PartitionKey]], Awaitable[None]],
                 close_session: Callable[[], Awaitable[None]],
                 halt: Callable[[int], None] = halt_process) -> None:
        self.take_offline = take_offline
        self.online_dirs = online_dirs
        self.report = report
        self.close_session = close_session
        self.halt = halt
        self.offline: set[Path] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    @classmethod
    def for_broker(cls, log_manager: LogManager, replicas: ReplicaManager,
                   coordinator: ZkCoordinator) -> LogDirFailureHandler:
        def take_offline(log_dir: Path) -> list[PartitionKey]:
            lost = log_manager.take_offline(log_dir)
            replicas.take_offline(lost)
            return lost
        return cls(take_offline, lambda: log_manager.online_dirs,
                   coordinator.report_offline_replicas, coordinator.close)

    def __call__(self, log_dir: Path, error: OSError) -> None:
        """Called where the write failed (inside a produce or a follower's append): the
        directory is taken offline on the next turn of the loop, not in the middle of the
        caller's own bookkeeping."""
        if log_dir in self.offline:
            return
        self.offline.add(log_dir)
        log.critical("log dir %s is offline: %s", log_dir, error)
        asyncio.get_running_loop().call_soon(self._go_offline, log_dir)

    def _go_offline(self, log_dir: Path) -> None:
        lost = self.take_offline(log_dir)
        if not self.online_dirs():
            log.critical("halting: no log dir is online (the controller moves this "
                         "broker's leaderships)")
            self._spawn(self._halt())
        else:
            log.critical("%d partitions of %s are offline; the other log dirs keep serving",
                         len(lost), log_dir)
            self._spawn(self._report(lost))

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _report(self, lost: list[PartitionKey]) -> None:
        try:
            await self.report(lost)
        except Exception:
            log.exception("could not report offline replicas to the controller; halting")
            await self._halt()

    async def _halt(self) -> None:
        try:
            await asyncio.wait_for(self.close_session(), SESSION_CLOSE_TIMEOUT_S)
        except Exception:
            log.exception("could not close the ZooKeeper session; halting anyway")
        finally:
            self.halt(HALT_EXIT_CODE)
