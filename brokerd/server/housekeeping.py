"""A broker's periodic chores, on one loop task: quota metrics, ISR checks, releasing the
open files of partitions no longer written, flushes by policy, retention, idle
connections, and the minute checkpoints.

Why one task with cadences rather than a task per chore: every chore is cheap when
nothing changed, they must not overlap with each other (retention deletes segments a
checkpoint lists), and one place shows what a broker does when it is otherwise idle.
The per-second flush chore visits only the logs appended to or rolled since their last
flush (``LogManager.logs_due_for_flush``), so idle partitions cost it nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from brokerd.replication.manager import ReplicaManager
from brokerd.server.listener import Listener
from brokerd.server.quotas import BrokerQuotaGlue
from brokerd.server.retention_clock import RetentionClock
from brokerd.storage import LogManager
from brokerd.storage.file_cache import OPEN_FILES

log = logging.getLogger(__name__)

HOUSEKEEPING_INTERVAL_S = 1.0
# Kafka's log.flush.offset.checkpoint.interval.ms default: recovery points every minute.
CHECKPOINT_INTERVAL_S = 60.0
# Logs snapshotted between yields to the loop: a snapshot may write and fsync a file.
CHECKPOINT_CHUNK = 16
# Logs whose retention is applied between yields: one pass over 30,000 logs (segments
# deleted among them) held a broker's loop for 0.8 s, in the middle of a failover.
RETENTION_CHUNK = 64


class Housekeeper:
    """Runs the chores every second until cancelled."""

    def __init__(self, quotas: BrokerQuotaGlue, replicas: ReplicaManager,
                 log_manager: LogManager, listeners: Sequence[Listener],
                 connections_max_idle_ms: int, retention_check_interval_ms: int) -> None:
        self.quotas = quotas
        self.replicas = replicas
        self.log_manager = log_manager
        self.listeners = listeners
        self.connections_max_idle_s = connections_max_idle_ms / 1000
        self.retention_check_interval_s = retention_check_interval_ms / 1000

    async def run(self) -> None:
        """Flushes by policy run their fsync in a worker thread (see ``Log.flush``);
        deletions read a wall clock immune to forward steps (:mod:`.retention_clock`)."""
        loop = asyncio.get_running_loop()
        last_checkpoint = last_retention = time.monotonic()
        clock = RetentionClock(time.time_ns() // 1_000_000, time.monotonic_ns() // 1_000_000)
        while True:
            await asyncio.sleep(HOUSEKEEPING_INTERVAL_S)
            now = time.monotonic()
            now_ms = clock.now_ms(time.time_ns() // 1_000_000, time.monotonic_ns() // 1_000_000)
            try:
                self.quotas.refresh_metrics()
                self.replicas.check_isrs()
                # Appends run on this (the loop's) thread, so its holds are the ones swept.
                OPEN_FILES.release_idle()
                for due in self.log_manager.logs_due_for_flush(now_ms):
                    await loop.run_in_executor(None, due.flush)
                if now - last_retention >= self.retention_check_interval_s:
                    last_retention = now
                    await self.enforce_retention(now_ms)
                for listener in self.listeners:
                    listener.close_idle(now - self.connections_max_idle_s)
                if now - last_checkpoint >= CHECKPOINT_INTERVAL_S:
                    last_checkpoint = now
                    await self.checkpoint()
            except Exception:
                log.exception("housekeeping failed; retrying next round")

    async def enforce_retention(self, now_ms: int) -> None:
        """Retention, then the removal of files whose deletion delay is over, a chunk of
        logs at a time.  A log deleted meanwhile is skipped."""
        for count, (key, log_) in enumerate(self.log_manager.all_logs().items(), 1):
            if self.log_manager.get(*key) is log_:
                log_.enforce_retention(now_ms)
                log_.delete_expired_files(now_ms)
            if count % RETENTION_CHUNK == 0:
                await asyncio.sleep(0)

    async def checkpoint(self) -> None:
        """Producer-state snapshots a chunk of logs at a time (thousands in one go would
        stall the loop for seconds), then the checkpoint files.  A log deleted meanwhile
        is skipped."""
        for count, (key, log_) in enumerate(self.log_manager.all_logs().items(), 1):
            if self.log_manager.get(*key) is log_:
                log_.take_producer_snapshot()
            if count % CHECKPOINT_CHUNK == 0:
                await asyncio.sleep(0)
        self.log_manager.write_checkpoints()
