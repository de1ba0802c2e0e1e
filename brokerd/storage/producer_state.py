"""Idempotent-producer state of one partition: per producer id, its epoch and the
metadata of its last five batches, so a retried batch is recognised and answered with
its original offsets instead of being written twice.

Rules (Kafka's ``ProducerAppendInfo``), for a batch with producer id >= 0:
- a batch whose epoch equals the producer's and whose (first, last) sequence equals one
  of the cached five is a *duplicate*;
- an epoch older than the producer's is fenced (INVALID_PRODUCER_EPOCH);
- a newer epoch must start at sequence 0;
- the same epoch must continue at last sequence + 1 (wrapping after 2**31 - 1);
- an unknown producer (new, or expired, or its data deleted) may start anywhere.

Transactions: a producer's open transaction is remembered by its first offset (set by
its first transactional data batch, cleared by its commit or abort marker, which
:meth:`ProducerStateManager.update` reports as a :class:`CompletedTxn`).  A marker may
carry a newer epoch than the producer's batches (the coordinator bumped it to fence a
zombie); it then becomes the producer's epoch.

Snapshot file ``<offset, 20 digits>.snapshot`` = the state after every batch below that
offset, big-endian::

    u16 version (2) | u32 crc32c(body) | body
    body: i32 producer count, then per producer:
          i64 producer id | i16 epoch | i64 last timestamp | i64 open transaction's first
          offset (-1: none) | u8 batch count,
          then per batch: i32 first seq | i32 last seq | i64 first offset | i64 last offset
                        | i64 max timestamp

Version 1 (no transaction field) is still read.

Thread-safety: not thread-safe; owned by the log's thread.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import crc32c

from brokerd.protocol.records import BatchHeader
from brokerd.storage.checkpoint import write_atomically
from brokerd.storage.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from brokerd.storage.transactions import ABORT, CompletedTxn, is_transactional_data

RETAINED_BATCHES = 5  # Kafka's max.in.flight.requests.per.connection limit for idempotence
INT32_MAX = 2**31 - 1
SNAPSHOT_SUFFIX = ".snapshot"

_HEADER = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_PRODUCER_V1 = struct.Struct(">qhqB")
_PRODUCER = struct.Struct(">qhqqB")
_BATCH = struct.Struct(">iiqqq")
_VERSION = 2


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    """The batch's last sequence; sequences wrap from 2**31 - 1 to 0."""
    return (base_sequence + last_offset_delta) % (INT32_MAX + 1)


@dataclass(frozen=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    max_timestamp: int


@dataclass
class ProducerEntry:
    producer_id: int
    epoch: int
    last_timestamp: int = -1
    current_txn_first_offset: int = -1
    # Offset of the last transaction marker seen (memory only): KIP-890's verification
    # guard, so a write verified before a marker is not appended after it.
    last_marker_offset: int = -1
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=RETAINED_BATCHES))

    @property
    def last_seq(self) -> int | None:
        return self.batches[-1].last_seq if self.batches else None

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        if header.producer_epoch != self.epoch:
            return None
        last = last_sequence(header.base_sequence, header.last_offset_delta)
        for batch in self.batches:
            if batch.first_seq == header.base_sequence and batch.last_seq == last:
                return batch
        return None


class ProducerStateManager:
    """Producer id -> :class:`ProducerEntry` for one partition.

    The open transactions are kept apart as well (producer id -> first offset): every
    fetch answer reads the last stable offset, and scanning every producer for it cost
    each fetch time in proportion to the producers the partition remembers."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        self._open: dict[int, int] = {}

    def check(self, headers: Iterable[BatchHeader]) -> BatchMetadata | None:
        """Validate a leader append's batches in order without changing state.

        Returns the original metadata of the first duplicate batch (the caller then stores
        nothing and answers with its offsets), else None; raises on a fenced epoch or a
        sequence gap. Later batches of the same producer in one record set are checked
        against the earlier ones.
        """
        pending: dict[int, tuple[int, int | None]] = {}  # producer id -> (epoch, last seq)
        for header in headers:
            if header.producer_id < 0 or header.is_control:
                continue
            entry = self.producers.get(header.producer_id)
            if header.producer_id not in pending and entry is not None:
                duplicate = entry.find_duplicate(header)
                if duplicate is not None:
                    return duplicate
            epoch, last_seq = pending.get(
                header.producer_id, (entry.epoch, entry.last_seq) if entry else (-1, None)
            )
            self._check_sequence(header, epoch, last_seq)
            if header.base_sequence >= 0:
                last_seq = last_sequence(header.base_sequence, header.last_offset_delta)
            pending[header.producer_id] = (header.producer_epoch, last_seq)
        return None

    @staticmethod
    def _check_sequence(header: BatchHeader, epoch: int, last_seq: int | None) -> None:
        if epoch < 0:
            return  # unknown producer: accept any sequence
        if header.producer_epoch < epoch:
            raise InvalidProducerEpochError(
                f"producer {header.producer_id} epoch {header.producer_epoch} < {epoch}"
            )
        if header.base_sequence < 0:
            return
        if header.producer_epoch > epoch:
            if header.base_sequence != 0:
                raise OutOfOrderSequenceError(
                    f"producer {header.producer_id} new epoch {header.producer_epoch} "
                    f"starts at sequence {header.base_sequence}, not 0"
                )
            return
        if last_seq is not None and header.base_sequence != (last_seq + 1) % (INT32_MAX + 1):
            raise OutOfOrderSequenceError(
                f"producer {header.producer_id} sequence {header.base_sequence} "
                f"does not follow {last_seq}"
            )

    def update(self, header: BatchHeader, marker: int | None = None) -> CompletedTxn | None:
        """Record a stored batch (offsets final); used for appends and for replay.

        ``marker``: for a control batch, its type (``transactions.ABORT``/``COMMIT``);
        the transaction it ends is returned.  A marker without an open transaction (an
        abort after a fence, a retried marker) completes an empty one at its own offset.
        """
        if header.producer_id < 0:
            return None
        entry = self.producers.get(header.producer_id)
        completed = None
        if header.is_control and marker is not None:
            first = entry.current_txn_first_offset if entry is not None else -1
            completed = CompletedTxn(header.producer_id,
                                     first if first >= 0 else header.base_offset,
                                     header.base_offset, marker == ABORT)
            if entry is not None:
                entry.current_txn_first_offset = -1
                self._open.pop(header.producer_id, None)
        if entry is None or entry.epoch != header.producer_epoch:
            entry = ProducerEntry(header.producer_id, header.producer_epoch)
            self.producers[header.producer_id] = entry
            self._open.pop(header.producer_id, None)
        if completed is not None:
            entry.last_marker_offset = header.base_offset
        if is_transactional_data(header) and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = header.base_offset
            self._open[header.producer_id] = header.base_offset
        if header.base_sequence >= 0 and not header.is_control:
            entry.batches.append(
                BatchMetadata(
                    header.base_sequence,
                    last_sequence(header.base_sequence, header.last_offset_delta),
                    header.base_offset,
                    header.last_offset,
                    header.max_timestamp,
                )
            )
        entry.last_timestamp = max(entry.last_timestamp, header.max_timestamp)
        return completed

    def open_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of its open transaction (a copy)."""
        return dict(self._open)

    def open_first_offsets(self) -> Collection[int]:
        """The first offsets of the open transactions (a live view: read, don't keep)."""
        return self._open.values()

    def evict_below(self, log_start_offset: int) -> None:
        """Forget producers none of whose retained batches survive in the log (a producer
        with an open transaction is kept: its first offset bounds the LSO)."""
        for producer_id in [
            pid for pid, e in self.producers.items()
            if e.last_offset < log_start_offset and e.current_txn_first_offset < 0
        ]:
            del self.producers[producer_id]

    def expire(self, now_ms: int, expiration_ms: int) -> None:
        """Forget producers idle for longer than ``producer.id.expiration.ms``, except
        those with an open transaction (Kafka keeps them until the transaction ends)."""
        for producer_id in [
            pid
            for pid, e in self.producers.items()
            if e.last_timestamp < now_ms - expiration_ms and e.current_txn_first_offset < 0
        ]:
            del self.producers[producer_id]

    # -- snapshots ----------------------------------------------------------------------
    def write_snapshot(self, path: Path) -> None:
        parts = [_COUNT.pack(len(self.producers))]
        for entry in self.producers.values():
            parts.append(
                _PRODUCER.pack(
                    entry.producer_id, entry.epoch, entry.last_timestamp,
                    entry.current_txn_first_offset, len(entry.batches)
                )
            )
            parts.extend(
                _BATCH.pack(b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.max_timestamp)
                for b in entry.batches
            )
        body = b"".join(parts)
        write_atomically(path, _HEADER.pack(_VERSION, crc32c.crc32c(body)) + body)

    @classmethod
    def read_snapshot(cls, path: Path) -> ProducerStateManager:
        """Parse a snapshot; raises ValueError when it is torn or corrupt."""
        data = path.read_bytes()
        try:
            version, crc = _HEADER.unpack_from(data, 0)
            body = memoryview(data)[_HEADER.size :]
            if version not in (1, _VERSION) or crc32c.crc32c(body) != crc:
                raise ValueError(f"bad version or checksum in {path}")
            layout = _PRODUCER if version == _VERSION else _PRODUCER_V1
            state = cls()
            (count,) = _COUNT.unpack_from(body, 0)
            position = _COUNT.size
            for _ in range(count):
                fields = layout.unpack_from(body, position)
                position += layout.size
                producer_id, epoch, last_timestamp, batches = (*fields[:3], fields[-1])
                entry = ProducerEntry(producer_id, epoch, last_timestamp)
                if version == _VERSION and fields[3] >= 0:
                    entry.current_txn_first_offset = fields[3]
                    state._open[producer_id] = fields[3]
                for _ in range(batches):
                    entry.batches.append(BatchMetadata(*_BATCH.unpack_from(body, position)))
                    position += _BATCH.size
                state.producers[producer_id] = entry
            return state
        except struct.error as exc:
            raise ValueError(f"truncated snapshot {path}") from exc
