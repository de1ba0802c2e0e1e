"""``LogManager``: every partition log of this broker, across one or more log dirs.

Each log dir holds partition directories ``<topic>-<partition>`` plus three offset
checkpoints (``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
``replication-offset-checkpoint``; format in :mod:`checkpoint`) and, between a clean
shutdown and the next start, the ``.kafka_cleanshutdown`` marker. The marker is removed
as soon as loading finishes, so its presence at start-up proves the previous run closed
every log cleanly; without it, each log re-validates from its recovery point.

Deleted partitions are first renamed to ``<topic>-<partition>.<hex>-delete`` (atomic,
so a crash never resurrects a half-deleted log) and then removed; leftovers of that kind
are removed at load. Periodic work is exposed as hooks the server schedules with
explicit ``now_ms``: :meth:`logs_due_for_flush` and :meth:`checkpoint`; retention is
applied log by log (``Log.enforce_retention``), so the server can yield between logs.

Flushes by policy (``flush.messages``, ``flush.ms``, and every rolled segment) look only
at the logs in an "unflushed" set: each log reports its appends and rolls through its
``on_unflushed`` callback, which adds its partition, and :meth:`logs_due_for_flush` drops
a partition once its log has nothing left to flush.  So an idle log costs nothing per
housekeeping round (a broker hosting 30,000 replicas used to test every one of them
every second).

Thread-safety: not thread-safe; call from the event loop. Only ``Log.flush`` runs in
worker threads (of logs returned by :meth:`logs_due_for_flush`), and :meth:`close` closes
the logs in worker threads of its own, waiting for them.
"""

from __future__ import annotations

import logging
import re
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from brokerd.storage.checkpoint import (
    CLEAN_SHUTDOWN_MARKER,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    TopicPartition,
    fsync_directory,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from brokerd.storage.config import LogConfig
from brokerd.storage.directory_remover import DIRECTORY_REMOVER
from brokerd.storage.errors import LogDirFailure
from brokerd.storage.log import Log

logger = logging.getLogger(__name__)

_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_DELETE_SUFFIX = "-delete"
# Threads closing the logs at a clean shutdown (see LogManager.close).
CLOSE_THREADS = 8


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_partition_dir(name: str) -> TopicPartition | None:
    """(topic, partition) of a partition directory name, None for anything else."""
    match = _PARTITION_DIR.match(name)
    if match is None or name.endswith(_DELETE_SUFFIX):
        return None
    return match["topic"], int(match["partition"])


class LogManager:
    """Owns the logs of all partitions hosted by this broker."""

    def __init__(
        self,
        log_dirs: list[Path],
        default_config: LogConfig,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not log_dirs:
            raise ValueError("at least one log dir is required")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.default_config = default_config
        self._clock = clock
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        # Partitions whose log may have something to flush (see the module docstring).
        self._unflushed: set[TopicPartition] = set()
        # Directories renamed for deletion, per log dir, until complete_deletions.
        self._renamed: dict[Path, list[Path]] = {}
        # Log dirs a write failed in (KIP-112): their logs are dropped, nothing is created,
        # checkpointed or marked clean there until the broker restarts.
        self.offline_dirs: set[Path] = set()

    # -- start-up -----------------------------------------------------------------------
    def load(self, topic_configs: Mapping[str, LogConfig] | None = None) -> None:
        """Open every partition directory (recovering after an unclean shutdown), then
        remove the clean-shutdown markers. ``topic_configs`` overrides the default config
        per topic; it can also be applied later with ``Log.update_config``."""
        configs = topic_configs or {}
        for log_dir in self.log_dirs:
            log_dir.mkdir(parents=True, exist_ok=True)
            marker = log_dir / CLEAN_SHUTDOWN_MARKER
            clean = marker.exists()
            recovery_points = read_offset_checkpoint(log_dir / RECOVERY_POINT_CHECKPOINT)
            log_starts = read_offset_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT)
            high_watermarks = read_offset_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT)
            for child in sorted(log_dir.iterdir()):
                if not child.is_dir():
                    continue
                if child.name.endswith(_DELETE_SUFFIX):
                    shutil.rmtree(child, ignore_errors=True)
                    continue
                key = parse_partition_dir(child.name)
                if key is None:
                    continue
                if key in self._logs:
                    raise RuntimeError(f"partition {key} found in two log dirs")
                if not clean:
                    logger.warning("recovering %s after an unclean shutdown", child)
                self._logs[key] = Log(
                    child,
                    configs.get(key[0], self.default_config),
                    recovery_point=recovery_points.get(key, 0),
                    log_start_offset=log_starts.get(key, 0),
                    high_watermark=high_watermarks.get(key, 0),
                    clean_shutdown=clean,
                    clock=self._clock,
                    on_unflushed=self._reporter(key),
                )
                self._dir_of[key] = log_dir
                self._unflushed.add(key)  # the first round checks what loading left
            marker.unlink(missing_ok=True)
            fsync_directory(log_dir)
        self.checkpoint()

    # -- partitions ---------------------------------------------------------------------
    def get(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def all_logs(self) -> dict[TopicPartition, Log]:
        return dict(self._logs)

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        """The log dir holding the partition's directory (None if not hosted)."""
        return self._dir_of.get((topic, partition))

    def get_or_create(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        """The partition's log, created in the log dir hosting the fewest partitions if
        new. A given ``config`` replaces an existing log's config."""
        key = (topic, partition)
        existing = self._logs.get(key)
        if existing is not None:
            if config is not None:
                existing.update_config(config)
            return existing
        online = self.online_dirs
        if not online:
            raise LogDirFailure("every log dir is offline", self.log_dirs[0])
        # One counting pass (not one per dir): creating thousands of partitions stays linear.
        counts = Counter(self._dir_of.values()) if len(online) > 1 else Counter()
        log_dir = min(online, key=lambda d: counts[d])
        directory = log_dir / partition_dir_name(topic, partition)
        log = Log(
            directory,
            config or self.default_config,
            clean_shutdown=True,
            clock=self._clock,
            on_unflushed=self._reporter(key),
        )
        self._logs[key] = log
        self._dir_of[key] = log_dir
        return log

    def _reporter(self, key: TopicPartition) -> Callable[[], None]:
        """The ``on_unflushed`` callback of ``key``'s log."""
        unflushed = self._unflushed
        return lambda: unflushed.add(key)

    @property
    def online_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if d not in self.offline_dirs]

    def take_offline(self, log_dir: Path) -> list[TopicPartition]:
        """A write in ``log_dir`` failed: forget its logs (closed as far as the failed
        disk lets them be; their files stay for recovery at the next start) and return
        the partitions they belonged to."""
        self.offline_dirs.add(log_dir)
        lost = [key for key, where in self._dir_of.items() if where == log_dir]
        for key in lost:
            del self._dir_of[key]
            try:
                self._logs.pop(key).close_files()
            except OSError:
                pass  # the disk that failed: recovery at the next start sorts it out
        return lost

    def delete(self, topic: str, partition: int) -> bool:
        """Close and remove the partition's log; False if this broker has none."""
        return bool(self.delete_many([(topic, partition)]))

    def delete_many(self, keys: Iterable[TopicPartition]) -> list[TopicPartition]:
        """Close and remove the logs of ``keys`` this broker has; return those it had.

        Why together: each log dir's checkpoints list all its logs, so rewriting them
        (and fsyncing the log dir) per deleted partition made deleting a topic quadratic
        on the event loop: 1,500 partitions took 8.8 s, 81 % of it rewriting checkpoints.
        Kafka deletes a batch the same way.  Durable before this returns."""
        deleted = [key for key in keys if self.begin_deletion(key)]
        self.complete_deletions()
        return deleted

    def begin_deletion(self, key: TopicPartition) -> bool:
        """Close the log of ``key`` and rename its directory for deletion; False if this
        broker has none.  The rename is durable, and the checkpoints forget the log, at the
        next :meth:`complete_deletions` (a topic's thousands of logs are deleted a slice
        of the event loop at a time, then completed once).  A deleted log is neither
        flushed nor trimmed (``Log.close_files``); its directory is removed by
        :data:`~brokerd.storage.directory_remover.DIRECTORY_REMOVER`, off the loop."""
        log = self._logs.pop(key, None)
        if log is None:
            return False
        log_dir = self._dir_of.pop(key)
        # A leader-epoch checkpoint still being written could land in a new log of the
        # same name: wait for it, then release the files.
        log.leader_epoch_cache.flush()
        log.close_files()
        renamed = log.directory.with_name(
            f"{log.directory.name}.{uuid.uuid4().hex}{_DELETE_SUFFIX}")
        log.directory.rename(renamed)
        self._renamed.setdefault(log_dir, []).append(renamed)
        return True

    def complete_deletions(self) -> None:
        """Make the renames of :meth:`begin_deletion` durable (one log-dir fsync), rewrite
        the checkpoints without those logs, and hand the directories to the remover."""
        renamed, self._renamed = self._renamed, {}
        for log_dir, directories in renamed.items():
            fsync_directory(log_dir)
            self._write_checkpoints(log_dir)
            DIRECTORY_REMOVER.remove(directories)

    # -- periodic hooks -----------------------------------------------------------------
    def logs_due_for_flush(self, now_ms: int) -> list[Log]:
        """Logs whose flush policy asks for an fsync; run ``log.flush`` in a worker.
        Visits only the unflushed set, and forgets the partitions (deleted, or flushed
        since) that have nothing left to flush: their next append adds them again."""
        due: list[Log] = []
        done: list[TopicPartition] = []
        for key in self._unflushed:
            log = self._logs.get(key)
            if log is None or not log.flush_pending():
                done.append(key)
            elif log.flush_due(now_ms):
                due.append(log)
        self._unflushed.difference_update(done)
        return due

    def checkpoint(self) -> None:
        """Persist recovery points, log starts and high watermarks of every log dir, and
        each log's producer-state snapshot."""
        for log in self._logs.values():
            log.take_producer_snapshot()
        self.write_checkpoints()

    def write_checkpoints(self) -> None:
        """The checkpoint files alone (callers that snapshot producer state themselves,
        spread over time, finish with this)."""
        for log_dir in self.online_dirs:
            self._write_checkpoints(log_dir)

    def _write_checkpoints(self, log_dir: Path) -> None:
        logs = {key: log for key, log in self._logs.items() if self._dir_of[key] == log_dir}
        write_offset_checkpoint(
            log_dir / RECOVERY_POINT_CHECKPOINT, {k: v.recovery_point for k, v in logs.items()}
        )
        write_offset_checkpoint(
            log_dir / LOG_START_OFFSET_CHECKPOINT,
            {k: v.log_start_offset for k, v in logs.items()},
        )
        write_offset_checkpoint(
            log_dir / REPLICATION_OFFSET_CHECKPOINT,
            {k: v.high_watermark for k, v in logs.items()},
        )

    def close(self) -> None:
        """Clean shutdown: close every log (flush + snapshot), write the checkpoints, and
        only then the clean-shutdown markers.

        The logs close in :data:`CLOSE_THREADS` worker threads, one log per thread at a
        time: requests, fetchers and the cleaner have stopped and the caller's thread
        waits here (a policy flush still running in the housekeeper's executor is allowed
        beside a close, as it always was), and what logs share (the open-file cache, the
        checkpoint writer) is thread-safe.  Closing is mostly waiting on the file system:
        a log never flushed since it was created owes two directory fsyncs, and trimming
        each index file is a journaled truncate, so a broker with 30,000 idle replicas
        spent most of a minute here one log after another, at a tenth of a core, while
        concurrent operations share the file system's journal commits."""
        self.complete_deletions()  # of a topic whose deletion the shutdown interrupted
        started = time.monotonic()
        with ThreadPoolExecutor(CLOSE_THREADS, thread_name_prefix="log-close") as pool:
            for _ in pool.map(Log.close, self._logs.values()):
                pass  # the first failure is raised here, as the sequential close did
        logger.info("closed %d logs in %.2fs", len(self._logs), time.monotonic() - started)
        for log_dir in self.online_dirs:  # an offline dir is recovered at the next start
            self._write_checkpoints(log_dir)
            (log_dir / CLEAN_SHUTDOWN_MARKER).touch()
            fsync_directory(log_dir)
        self._logs.clear()
        self._dir_of.clear()
        self._unflushed.clear()
