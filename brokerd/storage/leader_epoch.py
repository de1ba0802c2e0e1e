"""``LeaderEpochCache``: which leader epoch wrote which offsets, for replica truncation.

A sorted list of (epoch, start offset): epoch ``e`` wrote offsets from its start offset
up to the next entry's start offset (or the log end for the latest epoch). Followers ask
"where did my epoch end?" (OffsetForLeaderEpoch) to truncate divergent tails. Persisted
in the partition's ``leader-epoch-checkpoint`` (format in :mod:`checkpoint`) on every
change; changes are rare (one per leader election), but come in bursts: a broker taking
500 leaderships changes 500 caches at once.

Persistence is asynchronous: the in-memory list is authoritative at once, and each change
hands the whole new list to a background
:class:`~brokerd.storage.checkpoint_writer.CheckpointWriter` (coalesced per file, written
in order, a burst's files made durable together: one syncfs instead of two fsyncs per
file), so an election never waits for an fsync on the event loop (Kafka writes
synchronously, but has a thread per request).
What makes a lost write safe:

* the log's flush calls :meth:`flush` before it advances the recovery point, so every
  batch below the recovery point has its epoch in the checkpoint on disk;
* after an unclean shutdown the log re-derives the cache from the batches above the
  recovery point (:meth:`restore`, called by :func:`log_loader.restore_leader_epochs`);
* a clean close and a log deletion :meth:`flush` first, so nothing is written into a
  directory that is being renamed or removed.

Invariant: epochs and start offsets are both strictly increasing.
Thread-safety: not thread-safe; owned by the log's thread (:meth:`flush` may be called
from the thread flushing the log).
"""

from __future__ import annotations

from pathlib import Path

from brokerd.storage.checkpoint import encode_epoch_checkpoint, read_epoch_checkpoint
from brokerd.storage.checkpoint_writer import CheckpointWriter, in_parent_staging, replace_files

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

# One writer thread for every cache of the process: checkpoint fsyncs are serialised
# anyway by the disk, one thread bounds what a burst of elections can start, and it
# batches the burst's files, staged in their log dir (see checkpoint_writer).
EPOCH_CHECKPOINT_WRITER = CheckpointWriter(
    lambda files: replace_files(files, staging_for=in_parent_staging))


class LeaderEpochCache:
    """The (epoch, start offset) list of one partition, backed by its checkpoint file."""

    def __init__(self, path: Path, writer: CheckpointWriter | None = None) -> None:
        self.path = path
        self._writer = writer if writer is not None else EPOCH_CHECKPOINT_WRITER
        self._entries = read_epoch_checkpoint(path)

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1][0] if self._entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts writing at ``start_offset``; a no-op unless the epoch
        is newer. Entries at or past ``start_offset`` belonged to epochs that never got
        their data committed here, so they are dropped to keep offsets increasing."""
        if epoch < 0 or epoch <= self.latest_epoch:
            return
        self._entries = [e for e in self._entries if e[1] < start_offset]
        self._entries.append((epoch, start_offset))
        self._persist()

    def restore(self, epoch: int, offset: int) -> None:
        """Recovery: the batch at ``offset`` was written by ``epoch``, whatever a stale
        checkpoint says.  Only entries consistent with that are kept — older epochs that
        started before ``offset``, and ``epoch`` itself if it started at or before it — and
        ``epoch`` starts here unless it had started already.  Called for each batch in
        offset order, this rebuilds the cache's tail from the log."""
        if epoch < 0 or self._epoch_at(offset) == epoch:
            return
        self._entries = [(entry_epoch, start) for entry_epoch, start in self._entries
                         if (entry_epoch < epoch and start < offset)
                         or (entry_epoch == epoch and start <= offset)]
        if self.latest_epoch != epoch:
            self._entries.append((epoch, offset))
        self._persist()

    def _epoch_at(self, offset: int) -> int:
        """The epoch of the entry covering ``offset`` (the last one starting at or before it)."""
        covering = [entry_epoch for entry_epoch, start in self._entries if start <= offset]
        return covering[-1] if covering else UNDEFINED_EPOCH

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Kafka's OffsetForLeaderEpoch answer: (largest epoch <= ``epoch``, the offset
        where that epoch's writes ended); no epochs at all: (-1, -1).  Older than every
        epoch known here: (``epoch``, the start of the oldest known), as Kafka answers,
        since retention removed what lay before: a fetcher truncates no further than
        this log's start and replicates from there, where (-1, -1) made a follower whose
        high watermark is its log end keep the same tail and be told the same again on
        every fetch (truncation on fetch)."""
        if not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epoch < self._entries[0][0]:
            return epoch, self._entries[0][1]
        if epoch >= self.latest_epoch:
            return self.latest_epoch, log_end_offset
        for i, (entry_epoch, _) in enumerate(self._entries):
            if entry_epoch > epoch:
                return self._entries[i - 1][0], self._entries[i][1]
        raise AssertionError("unreachable: epoch < latest_epoch")

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs that started at or after ``end_offset`` (the log was truncated)."""
        kept = [e for e in self._entries if e[1] < end_offset]
        if kept != self._entries:
            self._entries = kept
            self._persist()

    def clear(self) -> None:
        """Forget every epoch (the log was emptied to restart at a leader's log start)."""
        if self._entries:
            self._entries = []
            self._persist()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at ``start_offset``: drop epochs wholly before it and move the
        start of the epoch covering it up to ``start_offset``."""
        covering = [i for i, e in enumerate(self._entries) if e[1] <= start_offset]
        if not covering:
            return
        i = covering[-1]
        kept = [(self._entries[i][0], start_offset)] + self._entries[i + 1 :]
        if kept != self._entries:
            self._entries = kept
            self._persist()

    def flush(self) -> None:
        """Block until the checkpoint file holds every change made so far."""
        self._writer.wait(self.path)

    def _persist(self) -> None:
        self._writer.submit(self.path, encode_epoch_checkpoint(self._entries))
