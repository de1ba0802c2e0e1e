"""The coordinator's :class:`~brokerd.groups.runtime.OffsetsLog` over hosted replicas.

``__consumer_offsets`` is an ordinary compacted topic; this adapter reads and appends its
partitions through the replication layer, so the coordinator never touches files itself.

Durability rule (Kafka's ``offsets.commit.required.acks = -1``): an append is complete only
when the high watermark has passed its last offset, i.e. every in-sync replica has it; only
then may the coordinator answer.  With a single replica the high watermark moves with the
append; with followers it moves when they fetch, which the adapter awaits (the partition's
commit wait, completed by the high watermark) up to ``commit_timeout_ms``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

from brokerd.groups.txn_offsets import resolve_transactions
from brokerd.protocol.records import decode_records, iter_batches
from brokerd.replication.manager import ReplicaManager
from brokerd.replication.partition import Partition
from brokerd.storage.transactions import CONTROL_PREFIX_BYTES, control_type

OFFSETS_TOPIC = "__consumer_offsets"

#: Topic configs the offsets topic is created with (Kafka's): compacted so each key keeps its
#: latest value, 100 MiB segments so compaction has closed segments to work on soon enough.
OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024),
                         "compression.type": "producer"}


class NotOffsetsLeaderError(Exception):
    """This broker does not (or no longer) lead the offsets partition."""


class ReplicaOffsetsLog:
    """Reads and appends the partitions of ``topic`` (``__consumer_offsets``, or another
    coordinator's internal topic such as ``__transaction_state``) led by this broker."""

    def __init__(self, replicas: ReplicaManager, commit_timeout_ms: int = 5000,
                 read_chunk_bytes: int = 1024 * 1024, topic: str = OFFSETS_TOPIC,
                 read_to_log_end: bool = False) -> None:
        self._replicas = replicas
        self._commit_timeout_ms = commit_timeout_ms
        self._read_chunk_bytes = read_chunk_bytes
        self.topic = topic
        # Replay to the log end, not the high watermark: a new leader's high watermark
        # lags its log until followers fetch again, and its log is the partition's truth
        # from now on (Kafka's transaction state loader reads to the log end too).
        self._read_to_log_end = read_to_log_end
        # Records of transactions (TxnOffsetCommit) the last read found without a marker.
        self._open: dict[int, dict[int, list[tuple[bytes | None, bytes | None]]]] = {}

    def _hosted(self, partition: int) -> Partition:
        hosted = self._replicas.leader(self.topic, partition)
        if hosted is None:
            raise NotOffsetsLeaderError(f"{self.topic}-{partition} is not led here")
        return hosted

    def leader_epoch(self, partition: int) -> int:
        return self._hosted(partition).leader_epoch

    def read_partition(self, partition: int) -> Iterator[tuple[bytes | None, bytes | None]]:
        """Records from the log start to the high watermark (committed data only; with
        ``read_to_log_end``, to the log end), in chunks so a large partition is never
        read into memory at once.  Transactional
        records (TxnOffsetCommit) appear at their commit marker and never if aborted;
        those still open are kept for :meth:`open_transactions`."""
        held: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
        self._open[partition] = held
        yield from resolve_transactions(self._entries(partition), held)

    def open_transactions(self, partition: int
                          ) -> dict[int, list[tuple[bytes | None, bytes | None]]]:
        """Producer id -> records of its transaction with no marker yet, as of the last
        :meth:`read_partition` of ``partition``."""
        return self._open.pop(partition, {})

    def _entries(self, partition: int
                 ) -> Iterator[tuple[int, int | None, tuple[bytes | None, bytes | None] | None]]:
        hosted = self._hosted(partition)
        offset = hosted.log_start_offset
        end = hosted.log_end_offset if self._read_to_log_end else hosted.high_watermark
        while offset < end:
            data = hosted.log.read(offset, self._read_chunk_bytes, max_offset=end).read()
            progressed = False
            for position, header in iter_batches(data):
                producer_id = header.producer_id if header.is_transactional else -1
                if header.is_control:
                    marker = control_type(data[position:position + CONTROL_PREFIX_BYTES])
                    if marker is not None:
                        yield producer_id, marker, None
                else:
                    for record in decode_records(data, position, header):
                        if record.offset >= offset:  # the log start may fall inside a batch
                            yield producer_id, None, (record.key, record.value)
                offset = header.last_offset + 1
                progressed = True
            if not progressed:
                return

    async def append(self, partition: int, batch: bytes) -> int:
        """Append as leader and wait until the batch is committed; return its base offset."""
        hosted = self._hosted(partition)
        result = hosted.append_as_leader(memoryview(batch))
        try:
            committed = await asyncio.wait_for(hosted.wait_for_commit(result.last_offset),
                                               self._commit_timeout_ms / 1000)
        except TimeoutError:
            raise TimeoutError(f"{self.topic}-{partition} did not commit offset "
                               f"{result.last_offset} in {self._commit_timeout_ms} ms") from None
        if not committed:
            raise NotOffsetsLeaderError(f"lost leadership of {self.topic}-{partition}")
        return result.base_offset
