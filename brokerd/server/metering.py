"""The broker side of usage metering: the handlers' hooks and the ``__usage`` appender.

Why a glue object: Produce and Fetch make one call each at the point where they already
account bytes for quotas, and stay ignorant of tenants, windows and the usage topic.  The
counting rules live in :mod:`brokerd.metering.usage`, the sequence rule in
:mod:`brokerd.metering.sequences`.

Who is metered: connections whose principal belongs to a tenant (operators, e.g. the
PLAINTEXT listener's ``ANONYMOUS``, are not billed), on topics of that tenant (the guard has
mapped them to ``<tenant>.<name>``; the records carry ``<name>``).  Internal topics are
never a tenant's, so ``__consumer_offsets`` and ``__usage`` itself are not billed.  A
transaction's markers, appended here for the coordinator, are billed to the principal and
client id that sent the producer's transactional data (:meth:`marker_written`).  Storage
is sampled from the partitions this broker leads whose topic is ``<tenant>.<name>`` of a
tenant the broker knows (from ``/tenants``), so an operator topic that merely contains a
dot is not billed to a tenant that does not exist.

Every ``metering.flush.interval.ms`` (default one minute) :meth:`BrokerMetering.flush`
samples storage, drains the accumulator into numbered records, saves the sequence book
(before the records can leave the process), and appends every pending record to
``__usage``:

* the topic is created on first use like ``__consumer_offsets`` (``delete`` policy,
  90 days' retention, ``metering.topic.num.partitions`` partitions, the offsets topic's
  replication factor);
* the record goes to partition ``crc32(tenant) % partitions`` when this broker leads it,
  else to the next partition (in index order, wrapping) that it leads: an append never
  leaves the broker, and the job reads every partition, so the partition only matters for
  read parallelism and per-tenant order, not for correctness; with no ``__usage``
  partition led here the records wait;
* a record is dropped from the pending list only once its append is committed (the high
  watermark passed it, i.e. ``acks=all``); a failed or uncommitted append is retried at the
  next flush with the same (broker id, window start, sequence) and the same value, so a
  copy that did land is deduplicated by the job, never double counted.  Batches carry no
  producer id: the identity in the value is what deduplicates.

Shutdown: :meth:`close` runs a last flush (the current, partial minute included; the saved
sequence book keeps its sequences from being reused after the restart) and keeps the
records it could not append in ``metering-pending.json``, re-sent after the restart
(:mod:`brokerd.metering.pending`), so a clean shutdown loses nothing.  A kill -9 loses
what was counted since the last flush plus any record not yet committed: at most one flush
interval of usage.  Not thread-safe: the loop thread only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from brokerd.metering import (
    SequenceBook,
    TrafficKey,
    UsageAccumulator,
    UsageRecord,
    load_pending,
    load_sequence_book,
    save_pending,
    save_sequence_book,
)
from brokerd.metering.txn_writers import TxnWriter, TxnWriters
from brokerd.protocol.records import build_batch
from brokerd.server import topic_admin
from brokerd.server.metrics import QUOTA_TYPE_LABELS
from brokerd.storage import StorageError
from brokerd.storage.transactions import MARKER_BATCH_BYTES

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.broker import Broker
    from brokerd.server.connection import Connection
    from brokerd.server.request import Request

log = logging.getLogger(__name__)

USAGE_TOPIC = "__usage"
# docs/billing.md asks for at least 62 days, so a month can be billed and re-billed.
USAGE_TOPIC_CONFIGS = {"cleanup.policy": "delete", "retention.ms": str(90 * 24 * 3_600_000)}
CREATE_WAIT_S = 10.0
COMMIT_WAIT_S = 5.0
# One append's batch stays well under the default max.message.bytes (1 MiB).
MAX_BATCH_BYTES = 512 * 1024


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class ProducedBytes:
    """What :meth:`BrokerMetering.produced` bills of a Produce request, noted by the handler
    as it appends: the record bytes of each topic's partitions (request order) and the
    producer id of a transactional request's appended batches.

    Why not the request's data itself: its records are memoryviews of the request's
    frame, and an acks=all request's answer waits for its replicas; the handler lets go of
    them once appended (as Kafka clears a produce request's records after appending them),
    so a connection's parked requests (up to 16, a megabyte each at full batches) do not
    keep their frames' memory until the followers catch up."""

    sizes: list[list[int]] = field(default_factory=list)
    producer_id: int | None = None


class BrokerMetering:
    """Meters tenant usage on one broker and appends it to ``__usage``."""

    def __init__(self, broker: Broker, clock: Callable[[], int] = wall_clock_ms) -> None:
        self._broker = broker
        self._clock = clock
        self._usage = UsageAccumulator()
        self._book: SequenceBook | None = None  # loaded at start, after the log dirs exist
        self._book_saved = True
        self._pending: list[UsageRecord] = []
        self._pending_on_disk = False  # a previous run's records are in metering-pending.json
        self._task: asyncio.Task[None] | None = None
        self.txn_writers = TxnWriters()
        # quota sensor -> (throttle ms, throttled responses) already metered
        self._throttle_seen: dict[tuple[object, object], tuple[int, int]] = {}

    @property
    def _state_dir(self) -> Path:
        return self._broker.config.log_dirs[0]

    # ---- hooks (Produce, Fetch, transaction markers) ------------------------------

    def produced(self, request: Request, sent: ProducedBytes,
                 responses: list[bodies.ProduceResponseResponse]) -> None:
        """A Produce request was answered: bill each tenant topic's accepted batches."""
        now = self._clock()
        for sizes, answered in zip(sent.sizes, responses, strict=True):
            key = self._key(request, answered["name"])
            if key is None:
                continue
            accepted = sum(size for size, result in
                           zip(sizes, answered["partition_responses"], strict=True)
                           if result["error_code"] == 0)
            self._usage.add_produce(key, accepted, now)
        if sent.producer_id is not None:
            self._remember_txn_writer(request, sent.producer_id, sent, responses)

    def marker_written(self, topic: str, producer_id: int) -> None:
        """A transaction marker was appended on a partition led here: billed as
        ``bytes_in`` to the principal and client id whose transactional data this leader
        last accepted from ``producer_id`` (:mod:`brokerd.metering.txn_writers`), and
        recorded on their produce quota; without one, billed to the topic's tenant alone."""
        tenant, separator, name = topic.partition(".")
        if not separator or not name or self._broker.security.max_partitions(tenant) <= 0:
            return  # an operator's or internal topic: not billed, like produce to it
        writer = self.txn_writers.writer(producer_id)
        if writer is not None and writer.principal.tenant == tenant:
            key = TrafficKey(tenant, writer.principal.kafka_principal, writer.client_id, name)
            self._broker.quotas.markers_written(writer.principal, writer.client_id,
                                                MARKER_BATCH_BYTES)
        else:
            key = TrafficKey(tenant, "", "", name)
        self._usage.add_markers(key, MARKER_BATCH_BYTES, self._clock())

    def _remember_txn_writer(self, request: Request, producer_id: int, sent: ProducedBytes,
                             responses: list[bodies.ProduceResponseResponse]) -> None:
        """Who sent this transactional request's producer id (one per request), once any
        of its data was accepted."""
        principal = request.connection.principal
        if principal is None or principal.tenant is None:
            return
        if any(size and result["error_code"] == 0
               for sizes, answered in zip(sent.sizes, responses, strict=True)
               for size, result in zip(sizes, answered["partition_responses"], strict=True)):
            self.txn_writers.wrote(producer_id, TxnWriter(principal,
                                                          request.header.client_id or ""))

    def fetched(self, request: Request, topics: list[bodies.FetchRequestTopic],
                sent: Iterable[tuple[str, int]]) -> None:
        """A consumer's Fetch was answered with ``sent`` = (topic, batch bytes) items."""
        now = self._clock()
        sent_bytes: dict[str, int] = {}
        for name, nbytes in sent:
            sent_bytes[name] = sent_bytes.get(name, 0) + nbytes
        for wanted in topics:
            key = self._key(request, wanted["topic"])
            if key is not None:
                self._usage.add_fetch(key, sent_bytes.get(wanted["topic"], 0), now)

    def _key(self, request: Request, cluster_topic: str) -> TrafficKey | None:
        connection: Connection = request.connection
        principal, namespace = connection.principal, connection.namespace
        if principal is None or principal.tenant is None or namespace is None:
            return None
        topic = namespace.to_tenant(cluster_topic)
        if not topic:
            return None
        return TrafficKey(principal.tenant, principal.kafka_principal,
                          request.header.client_id or "", topic,
                          request.body.get("rack_id") or "")

    # ---- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        """Load the sequence book and what the last run could not append, then flush
        every ``metering.flush.interval.ms``."""
        self._book = load_sequence_book(self._state_dir)
        self._pending = load_pending(self._state_dir)
        self._pending_on_disk = bool(self._pending)
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        interval_s = self._broker.config.metering_flush_interval_ms / 1000
        while True:
            await asyncio.sleep(interval_s)
            try:
                await self.flush()
            except Exception:
                log.exception("metering flush failed; its records are retried next time")

    async def close(self, timeout_s: float = 3.0) -> None:
        """Stop the timer and flush what is pending, partial minute included; what
        cannot be appended now is kept on disk for the next start.

        ``__usage`` is not created here: a shutting-down broker ignores the new topic's
        leadership, so the creation could only time out."""
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task  # a flush it was in has stopped; its records are still pending
        try:
            await asyncio.wait_for(self.flush(create_topic=False), timeout=timeout_s)
        except Exception:
            log.exception("final metering flush failed; its records are kept for the restart")
        if self._pending:
            log.warning("keeping %d usage records for the next start", len(self._pending))
        try:
            save_pending(self._state_dir, self._pending)
        except OSError as exc:  # the shutdown goes on; these records are lost
            log.error("cannot keep %d usage records: %s", len(self._pending), exc)

    # ---- flushing -------------------------------------------------------------------

    async def flush(self, create_topic: bool = True) -> None:
        """Sample storage, number the new records, save the book, append all pending."""
        assert self._book is not None
        now = self._clock()
        self._sample_storage(now)
        self._meter_throttles(now)
        records = self._usage.drain(self._broker.config.broker_id, self._book,
                                    self._broker.config.rack)
        self._pending.extend(records)
        if records or not self._book_saved:
            self._book.prune(now)
            try:
                save_sequence_book(self._state_dir, self._book)
                self._book_saved = True
            except OSError as exc:
                self._book_saved = False  # nothing numbered from it may leave the process
                log.warning("cannot save the metering sequence book: %s", exc)
                return
        if self._pending and await self._ensure_topic(create_topic):
            await self._append_pending()
        if self._pending_on_disk and not self._pending:
            save_pending(self._state_dir, [])  # the previous run's records are committed
            self._pending_on_disk = False

    def _meter_throttles(self, now: int) -> None:
        """Add what each tenant quota sensor throttled since the last flush (its counters'
        growth; a counter that went down belongs to a new sensor and counts whole)."""
        seen: dict[tuple[object, object], tuple[int, int]] = {}
        for metrics in self._broker.quotas.latest_metrics:
            entity = metrics.entity
            key = (metrics.quota_type, entity)
            totals = (metrics.throttle_time_ms_total, metrics.throttled_total)
            seen[key] = totals
            before = self._throttle_seen.get(key, (0, 0))
            if totals[0] < before[0] or totals[1] < before[1]:
                before = (0, 0)
            if entity.tenant and totals[1] > before[1]:
                self._usage.add_throttle(entity.tenant, QUOTA_TYPE_LABELS[metrics.quota_type],
                                         entity.user, entity.client_id, totals[0] - before[0],
                                         totals[1] - before[1], now)
        self._throttle_seen = seen

    def _sample_storage(self, now: int) -> None:
        security = self._broker.security
        for hosted in self._broker.replicas.partitions():
            if not hosted.is_leader:
                continue  # each partition's bytes are sampled once, by its leader
            tenant, separator, topic = hosted.topic.partition(".")
            if separator and topic and security.max_partitions(tenant) > 0:
                self._usage.sample_storage(tenant, topic, hosted.index,
                                           int(hosted.log.size_bytes), now)

    async def _ensure_topic(self, create: bool) -> bool:
        broker = self._broker
        if broker.cache.topic(USAGE_TOPIC) is not None:
            return True
        if not create:
            return False
        result, _ = await topic_admin.create_topic(
            broker, USAGE_TOPIC, broker.config.metering_topic_num_partitions,
            broker.config.offsets_topic_replication_factor, configs=dict(USAGE_TOPIC_CONFIGS),
            timeout_s=CREATE_WAIT_S)
        if not result.ok and not broker.cache.has_leaders(USAGE_TOPIC):
            log.warning("cannot create %s yet: %s", USAGE_TOPIC, result.error_message)
            return False
        return True

    def _target_partition(self, tenant: str, partitions: int) -> int | None:
        """The tenant's home partition if led here, else the next one led here."""
        home = zlib.crc32(tenant.encode()) % partitions
        for step in range(partitions):
            candidate = (home + step) % partitions
            if self._broker.replicas.leader(USAGE_TOPIC, candidate) is not None:
                return candidate
        return None

    async def _append_pending(self) -> None:
        metadata = self._broker.cache.topic(USAGE_TOPIC)
        if metadata is None:
            return
        by_partition: dict[int, list[UsageRecord]] = {}
        for record in self._pending:
            partition = self._target_partition(record.tenant, len(metadata.replicas))
            if partition is not None:
                by_partition.setdefault(partition, []).append(record)
        committed: set[UsageRecord] = set()
        for partition, records in sorted(by_partition.items()):
            for batch in _batches(records):
                if await self._append(partition, batch):
                    committed.update(batch)
        self._pending = [record for record in self._pending if record not in committed]

    async def _append(self, partition: int, records: list[UsageRecord]) -> bool:
        """Append one batch as leader; True once committed (high watermark past it)."""
        hosted = self._broker.replicas.leader(USAGE_TOPIC, partition)
        if hosted is None:
            return False
        now = self._clock()
        batch = build_batch([(r.tenant.encode(), r.value, [], now) for r in records])
        try:
            result = hosted.append_as_leader(memoryview(batch))
        except StorageError as exc:
            log.warning("appending usage to %s-%d failed: %s", USAGE_TOPIC, partition, exc)
            return False
        committed = hosted.wait_for_commit(result.last_offset)
        try:
            return await asyncio.wait_for(committed, COMMIT_WAIT_S)
        except TimeoutError:
            return False


def _batches(records: list[UsageRecord]) -> Iterable[list[UsageRecord]]:
    """Consecutive groups of records whose values add up to at most MAX_BATCH_BYTES."""
    batch: list[UsageRecord] = []
    size = 0
    for record in records:
        if batch and size + len(record.value) > MAX_BATCH_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(record)
        size += len(record.value)
    if batch:
        yield batch
