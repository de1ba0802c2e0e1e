"""Fetch (1) v4-12: read whole batches up to the high watermark, long-polling when short.

Consumers (``replica_id`` < 0) read up to the high watermark, or with
``isolation_level`` read_committed up to the last stable offset, with the aborted
transactions in that range so the client drops their records (Kafka's rule: the broker
never filters, the consumer does).  Followers (``replica_id``
>= 0, one of the partition's replicas, else NOT_LEADER_OR_FOLLOWER) read up to the log
end: the leader first records their ``fetch_offset`` as their log end offset, which may
advance the high watermark returned in this very response (and complete acks=all
produces) and grow the ISR.

Diverging epochs (v12+, truncation on fetch): a fetch naming a ``last_fetched_epoch`` whose
log is not a prefix of this one (this replica never wrote that epoch, or ended it before
the fetch offset; :func:`~brokerd.replication.rules.diverging_epoch`) is answered at once
with ``diverging_epoch``, this replica's (epoch, end offset) for it, and no records; a
follower's such fetch is not recorded.  The fetcher truncates there and fetches again.

Fetch from the closest replica (KIP-392, :mod:`brokerd.server.closest_replica`): a
consumer's v11+ fetch may be served by a follower, up to the follower's high watermark; a
leader with ``replica.selector.class`` set answers a consumer whose ``rack_id`` names
another rack with ``preferred_read_replica`` (and no records) when an in-sync follower
there holds the fetch offset.

Size limits (KIP-74): ``partition_max_bytes`` caps each partition and ``max_bytes`` the
whole response, except that the first partition with data always returns at least one
whole batch, so a batch larger than the limits never blocks a consumer.

Long poll: when fewer than ``min_bytes`` are available (and no partition has an error)
the request parks until one of its partitions has more for it (an append for a follower,
a high watermark advance for a consumer), ``max_wait_ms`` elapses, or the broker shuts
down; then it reads again.

Fetch sessions (KIP-227, v7+; rules in :mod:`brokerd.replication.fetch_sessions`): a full
fetch with epoch 0 creates a session over its partitions when the cache has room.  Each
session partition is bound once to its :class:`Partition`'s notifications (high
watermark advances and role changes; appends too for followers), which mark it pending
in the session and wake its parked fetch (a follower's only on appends and role changes:
a high watermark alone never ends its wait).  An incremental fetch therefore reads
only the partitions it names plus the pending ones, answers only those with something
to say, and parks on one session-wide wake-up: an idle partition costs nothing per
fetch.  A follower's session stands for a fetch of every partition in it at the
session's fetch offset (that offset *is* the follower's log end): named and pending
partitions are recorded at each fetch, and the idle rest through
:attr:`Partition.session_fetches`, which the ISR check reads, so a caught-up follower of
an idle partition stays in the ISR.

Quotas (consumers, not followers): an entity already over its fetch quota is answered at
once with no partitions and the throttle, without reading; otherwise ``max_bytes`` is
lowered to the quota's per-response cap, the log is read, and the response bytes are
charged; if that throttles, the answer is again empty (the bytes are taken back, so only
delivered bytes count) and the connection is muted.  A throttled answer changes no
session state except the epoch (as in Kafka): what it left out stays pending.

Leader replication throttle (``leader.replication.throttled.rate``, rules in
:mod:`brokerd.replication.leader_throttle`): a follower not in the ISR fetching a partition
its topic lists in ``leader.replication.throttled.replicas`` gets no records for it while
the leader's shared budget is spent (the partition stays pending, so it is fetched again);
the answered bytes of throttled partitions are charged to that budget.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from brokerd.protocol import ApiKey, ErrorCode
from brokerd.replication.fetch_sessions import (
    INVALID_SESSION_ID,
    CachedPartition,
    FetchSession,
    RequestKind,
    classify,
    next_epoch,
)
from brokerd.replication.leader_throttle import is_throttled
from brokerd.replication.rules import diverging_epoch, epoch_error
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.closest_replica import (
    NO_PREFERRED_REPLICA,
    preferred_replica,
    serving_partition,
)
from brokerd.server.tenancy import ApiNames, Gate, Names
from brokerd.server.tenancy_rules import CLUSTER_DENIED, TOPIC_DENIED, error_only
from brokerd.server.transfer import RegionList
from brokerd.storage import StorageError

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.replication.listeners import Listeners
    from brokerd.replication.partition import Partition
    from brokerd.server.connection import Connection
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.FETCH
READ_COMMITTED = 1  # isolation_level: stop at the last stable offset, name aborted txns
MIN_VERSION, MAX_VERSION = 4, 12
# Where this API's names live and which ACL operations they need (server.tenancy).
TENANCY = ApiNames(
    request=(Names(("topics", "topic"), Rt.TOPIC, Op.READ, TOPIC_DENIED),
             Names(("forgotten_topics_data", "topic"), Rt.TOPIC)),
    response=(Names(("responses", "topic"), Rt.TOPIC),),
    # Only brokers fetch as replicas (replica_id >= 0): that is ClusterAction.
    gates=(Gate(Rt.CLUSTER, Op.ALL, CLUSTER_DENIED, error_only,
                only_if=lambda body, version: body["replica_id"] >= 0),))


def _empty(index: int, error: int, hosted: Partition | None = None
           ) -> bodies.FetchResponsePartition:
    high_watermark = hosted.high_watermark if hosted is not None else -1
    stable = hosted.log.last_stable_offset if hosted is not None else -1
    return {"partition_index": index, "error_code": int(error),
            "high_watermark": high_watermark, "last_stable_offset": stable,
            "log_start_offset": hosted.log_start_offset if hosted is not None else -1,
            "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}


@dataclass
class _Wanted:
    """One partition a round reads: the request's fields, and its session entry if any."""

    topic: str
    wanted: bodies.FetchRequestPartition
    cached: CachedPartition | None = None


@dataclass
class _Read:
    """What a round read for one partition; ``more``: it may still have something to say
    (unread data or an error), so a session keeps it pending."""

    item: _Wanted
    answer: bodies.FetchResponsePartition
    nbytes: int
    more: bool


@dataclass
class _FetchRound:
    """One pass over a request's partitions, applying the size limits."""

    broker: HandlerContext
    body: bodies.FetchRequest
    version: int = 0
    connection: Connection | None = None
    total_bytes: int = 0
    answer_now: bool = False  # an error or a diverging epoch: answer without waiting
    sent: list[tuple[str, int]] = field(default_factory=list)  # (topic, bytes): metrics
    throttled_bytes: int = 0  # of partitions under the leader's replication throttle

    def read(self, items: list[_Wanted]) -> list[_Read]:
        remaining = max(self.body["max_bytes"], 0)
        reads = []
        for item in items:
            read = self._read_partition(item, remaining)
            remaining = max(remaining - read.nbytes, 0)
            reads.append(read)
        return reads

    def _read_partition(self, item: _Wanted, remaining: int) -> _Read:
        wanted, replica_id = item.wanted, self.body["replica_id"]
        hosted, error = serving_partition(self.broker, item.topic, wanted["partition"],
                                          replica_id, self.version,
                                          wanted["current_leader_epoch"])
        if hosted is not None:
            error = refusal(hosted, wanted, replica_id)
        if hosted is None or error:
            self.answer_now = True
            return _Read(item, _empty(wanted["partition"], error, hosted), 0, True)
        client_rack = self.body.get("rack_id") if replica_id < 0 else None
        if client_rack and self.connection is not None and (preferred := preferred_replica(
                self.broker, hosted, wanted["fetch_offset"], client_rack,
                self.connection.listener_name)) != NO_PREFERRED_REPLICA:
            answer = _empty(wanted["partition"], ErrorCode.NONE, hosted)
            answer["preferred_read_replica"] = preferred
            return _Read(item, answer, 0, False)
        diverging = _diverging_epoch(hosted, wanted)
        if diverging is not None:
            self.answer_now = True
            answer = _empty(wanted["partition"], ErrorCode.NONE, hosted)
            answer["diverging_epoch"] = {"epoch": diverging[0], "end_offset": diverging[1]}
            return _Read(item, answer, 0, False)
        limit = min(max(wanted["partition_max_bytes"], 0), remaining)
        readable_end = hosted.readable_end(for_replica=replica_id >= 0)
        throttled = replica_id >= 0 and self._leader_throttled(hosted)
        if throttled and self.broker.replicas.leader_throttle.holds_back(
                True, replica_id in hosted.isr, time.monotonic()):
            # Kafka leaves it out of the answer: the follower fetches it again later
            answer = _empty(wanted["partition"], ErrorCode.NONE, hosted)
            return _Read(item, answer, 0, wanted["fetch_offset"] < readable_end)
        read_committed = replica_id < 0 and self.body["isolation_level"] == READ_COMMITTED
        try:
            if read_committed:
                readable_end = hosted.log.last_stable_offset
                result = hosted.log.read(wanted["fetch_offset"], limit, max_offset=readable_end,
                                         min_one_batch=self.total_bytes == 0)
            else:
                result = hosted.read(wanted["fetch_offset"], limit,
                                     for_replica=replica_id >= 0,
                                     min_one_batch=self.total_bytes == 0)
        except StorageError as exc:
            self.answer_now = True
            return _Read(item, _empty(wanted["partition"], exc.error_code, hosted), 0, True)
        answer = _empty(wanted["partition"], ErrorCode.NONE, hosted)
        nbytes = 0
        if result.regions:
            records = RegionList(list(result.regions))
            answer["records"], nbytes = records, records.nbytes
            if read_committed:
                answer["aborted_transactions"] = [
                    {"producer_id": txn.producer_id, "first_offset": txn.first_offset}
                    for txn in hosted.log.aborted_transactions(wanted["fetch_offset"],
                                                               readable_end)]
            self.total_bytes += nbytes
            self.sent.append((item.topic, nbytes))
            if throttled:
                self.throttled_bytes += nbytes
        return _Read(item, answer, nbytes, wanted["fetch_offset"] < readable_end)


    def _leader_throttled(self, hosted: Partition) -> bool:
        """Under the leader's replication throttle (never while no rate is set)."""
        if not self.broker.replicas.leader_throttle.active:
            return False
        metadata = self.broker.cache.topics.get(hosted.topic)
        return metadata is not None and is_throttled(metadata.config, hosted.index,
                                                     self.broker.config.broker_id)


def refusal(hosted: Partition, wanted: bodies.FetchRequestPartition, replica_id: int
            ) -> ErrorCode:
    """Why a fetch of a partition led here is refused: a stale or future epoch, or a
    replica id that is not one of its replicas (NONE: it is served)."""
    error = epoch_error(wanted["current_leader_epoch"], hosted.leader_epoch)
    if not error and replica_id >= 0 and replica_id not in hosted.replicas:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return error


def _diverging_epoch(hosted: Partition, wanted: bodies.FetchRequestPartition
                     ) -> tuple[int, int] | None:
    """Where the fetcher's log parts from this one, by its ``last_fetched_epoch`` (v12+;
    see :func:`~brokerd.replication.rules.diverging_epoch`); None when it does not."""
    last_fetched = wanted.get("last_fetched_epoch", -1)
    if last_fetched < 0:
        return None
    epoch, end = hosted.log.leader_epoch_cache.end_offset_for(last_fetched,
                                                              hosted.log_end_offset)
    return diverging_epoch(last_fetched, wanted["fetch_offset"], epoch, end)


# ---- sessions bound to partitions ------------------------------------------------------


class _Binding:
    """A session partition's subscription to its hosted :class:`Partition`: changes mark
    it pending in the session; for a follower's session it also tells the partition when
    the follower last fetched it implicitly (see the module doc)."""

    def __init__(self, session: FetchSession, key: tuple[str, int], partition: Partition,
                 replica_id: int) -> None:
        self.session, self.key, self.partition = session, key, partition
        self.replica_id = replica_id
        self.refused = False  # its last answer was an error: no fetch of it is implied
        self._events: list[tuple[Listeners, Callable[[], None]]] = [
            (partition.role_changed, self.changed)]
        if replica_id >= 0:
            # A follower's parked fetch ends only on data (or an error): a high watermark
            # advance just rides along with its next answer, so it marks the partition
            # without waking the fetch.  Waking it re-read the session for nothing once
            # per acks=all request (the second follower's fetch advances the high
            # watermark while the first one's is parked).
            self._events += [(partition.appended, self.changed),
                             (partition.high_watermark_advanced, self.changed_quietly)]
            partition.session_fetches[replica_id] = self.implied_fetch_ms
        else:
            self._events.append((partition.high_watermark_advanced, self.changed))
        for event, callback in self._events:
            event.add(callback)

    def changed(self) -> None:
        self.session.mark(self.key)

    def changed_quietly(self) -> None:
        self.session.mark(self.key, wake=False)

    def implied_fetch_ms(self) -> int | None:
        """When the follower last fetched this partition at its cached offset."""
        return None if self.refused else self.session.last_used_ms

    def release(self) -> None:
        for event, callback in self._events:
            event.remove(callback)
        fetches = self.partition.session_fetches
        if fetches.get(self.replica_id) == self.implied_fetch_ms:
            del fetches[self.replica_id]


def _bind(broker: HandlerContext, session: FetchSession, cached: CachedPartition,
          replica_id: int) -> _Binding | None:
    """(Re)bind ``cached`` to the partition hosted now (replaced after a stop, or hosted
    only now).  Unhosted partitions stay unbound and pending: they answer an error."""
    hosted = broker.replicas.get(*cached.key)
    binding = cached.binding
    if isinstance(binding, _Binding) and binding.partition is hosted:
        return binding
    cached.close()
    if hosted is None:
        return None
    binding = cached.binding = _Binding(session, cached.key, hosted, replica_id)
    return binding


def _settle(broker: HandlerContext, session: FetchSession, cached: CachedPartition, read: _Read,
            replica_id: int) -> None:
    """After an answered read: keep the partition pending or let it rest, and note
    whether the follower's fetch of it was refused."""
    session.settle(cached.key, read.more)
    binding = _bind(broker, session, cached, replica_id)
    if binding is not None:
        binding.refused = (read.answer["error_code"] != ErrorCode.NONE
                           or "diverging_epoch" in read.answer)


class _Context:
    """What one request fetches under its session metadata, and how it is answered."""

    def __init__(self, kind: RequestKind, error: ErrorCode = ErrorCode.NONE,
                 session: FetchSession | None = None,
                 named: list[tuple[str, int]] | None = None) -> None:
        self.kind, self.error, self.session = kind, error, session
        self.named = named or []
        self.version = 0

    @classmethod
    def open(cls, broker: HandlerContext, body: bodies.FetchRequest) -> _Context:
        kind, error = classify(body["session_id"], body["session_epoch"])
        if error or kind is not RequestKind.INCREMENTAL:
            if not error and body["session_id"] != INVALID_SESSION_ID:
                broker.fetch_sessions.remove(body["session_id"])  # a full fetch closes it
            return cls(kind, error)
        session = broker.fetch_sessions.get(body["session_id"])
        if session is None:
            return cls(kind, ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != body["session_epoch"]:
            return cls(kind, ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        named = [((topic["topic"], wanted["partition"]), wanted)
                 for topic in body["topics"] for wanted in topic["partitions"]]
        added = session.update(named, [(topic["topic"], index)
                                       for topic in body["forgotten_topics_data"]
                                       for index in topic["partitions"]])
        for cached in added:
            _bind(broker, session, cached, body["replica_id"])
        if not session.partitions:  # nothing left: Kafka closes it and answers sessionless
            broker.fetch_sessions.remove(session.id)
            return cls(RequestKind.SESSIONLESS)
        broker.fetch_sessions.touch(session, broker.replicas.now_ms())
        session.epoch = next_epoch(session.epoch)
        return cls(kind, session=session, named=[key for key, _ in named])

    @property
    def throttled_session_id(self) -> int:
        """A throttled answer keeps an incremental session, creates none."""
        return self.session.id if self.session is not None else INVALID_SESSION_ID

    def items(self, body: bodies.FetchRequest) -> list[_Wanted]:
        """Full fetches read the request's partitions; incremental ones the partitions
        they name plus the session's pending ones, never the idle rest."""
        if self.session is None:
            return [_Wanted(topic["topic"], wanted) for topic in body["topics"]
                    for wanted in topic["partitions"]]
        return [_Wanted(cached.key[0], cached.wanted, cached)
                for cached in self.session.to_fetch(self.named)]

    async def wait(self, broker: HandlerContext, body: bodies.FetchRequest, timeout: float
                   ) -> None:
        """Park until something may have changed: one session-wide wake-up for an
        incremental fetch, else listeners on each of the request's partitions."""
        loop = asyncio.get_running_loop()
        woken = loop.create_future()

        def wake() -> None:
            if not woken.done():
                woken.set_result(None)

        def wake_on_shutdown(_: asyncio.Future[bool]) -> None:
            wake()

        hosted = [] if self.session is not None else _serving(broker, body, self.version)
        for_replica = body["replica_id"] >= 0
        if self.session is not None:
            self.session.notify = wake
        for partition in hosted:
            partition.add_listener(for_replica, wake)
        shutdown = _shutdown_wait(broker.shutting_down)
        shutdown.add_done_callback(wake_on_shutdown)
        timer = loop.call_later(timeout, wake)
        try:
            await woken
        finally:
            timer.cancel()
            shutdown.remove_done_callback(wake_on_shutdown)
            if self.session is not None:
                self.session.notify = None
            for partition in hosted:
                partition.remove_listener(for_replica, wake)

    def answer(self, broker: HandlerContext, body: bodies.FetchRequest, reads: list[_Read]
               ) -> tuple[list[_Read], int]:
        """The partitions to answer and the session id to answer with; session state
        (what the fetcher was told, what stays pending) changes only here."""
        if self.kind is RequestKind.SESSIONLESS:
            return reads, INVALID_SESSION_ID
        if self.session is None:
            return reads, _create_session(broker, body["replica_id"], reads)
        # Evicted while parked: answer, but leave the closed session unbound.
        live = broker.fetch_sessions.get(self.session.id) is self.session
        answered = []
        for read in reads:
            cached = read.item.cached
            assert cached is not None  # incremental reads are all session partitions
            if cached.must_respond(read.answer, read.nbytes):
                cached.remember(read.answer)
                answered.append(read)
            if live:
                _settle(broker, self.session, cached, read, body["replica_id"])
        return answered, self.session.id


# One task per broker awaits its shutdown and every parked fetch hangs a callback on it:
# a task of its own per parked fetch (plus asyncio.wait's bookkeeping) was a measurable
# share of the leader's CPU per acks=all request, which parks two follower fetches and a
# consumer's (see docs/brokerd.md, Replication).
_SHUTDOWN_WAITS: weakref.WeakKeyDictionary[asyncio.Event, asyncio.Task[bool]] = (
    weakref.WeakKeyDictionary())


def _shutdown_wait(shutting_down: asyncio.Event) -> asyncio.Task[bool]:
    """The shared task that finishes when ``shutting_down`` is set."""
    task = _SHUTDOWN_WAITS.get(shutting_down)
    if task is None or task.cancelled():
        task = asyncio.get_running_loop().create_task(shutting_down.wait())
        _SHUTDOWN_WAITS[shutting_down] = task
    return task


def _create_session(broker: HandlerContext, replica_id: int, reads: list[_Read]) -> int:
    """A full fetch with epoch 0: a session over its partitions if the cache has room."""
    partitions: dict[tuple[str, int], CachedPartition] = {}
    for read in reads:
        key = (read.item.topic, read.item.wanted["partition"])
        cached = partitions[key] = CachedPartition(key, read.item.wanted)
        cached.remember(read.answer)
    session = broker.fetch_sessions.create(broker.replicas.now_ms(), replica_id >= 0,
                                           partitions)
    if session is None:
        return INVALID_SESSION_ID
    for read in reads:
        key = (read.item.topic, read.item.wanted["partition"])
        _settle(broker, session, partitions[key], read, replica_id)
    return session.id


def _serving(broker: HandlerContext, body: bodies.FetchRequest, version: int
             ) -> list[Partition]:
    return [p for topic in body["topics"] for wanted in topic["partitions"]
            if (p := serving_partition(broker, topic["topic"], wanted["partition"],
                                       body["replica_id"], version)[0]) is not None]


def _record_follower_fetch(broker: HandlerContext, replica_id: int, items: list[_Wanted]) -> None:
    """The follower's fetch offsets are its log end offsets: record them before reading
    (a fetch the read refuses, or answers with a diverging epoch, is not recorded).
    Under a session, the partitions not among ``items`` count through
    :attr:`Partition.session_fetches`.  A leadership delivered but not applied yet is
    applied first (``leader_partition``), so the first fetch of a new follower already
    counts for the high watermark."""
    for item in items:
        hosted = broker.leader_partition(item.topic, item.wanted["partition"])[0]
        if (hosted is not None and not refusal(hosted, item.wanted, replica_id)
                and _diverging_epoch(hosted, item.wanted) is None):
            broker.replicas.record_follower_fetch(hosted, replica_id,
                                                  item.wanted["fetch_offset"])


def _by_topic(reads: list[_Read]) -> list[bodies.FetchResponseResponse]:
    topics: dict[str, list[bodies.FetchResponsePartition]] = {}
    for read in reads:
        topics.setdefault(read.item.topic, []).append(read.answer)
    return [{"topic": topic, "partitions": answers} for topic, answers in topics.items()]


def _response(responses: list[bodies.FetchResponseResponse], throttle_ms: int = 0,
              session_id: int = INVALID_SESSION_ID,
              error: ErrorCode = ErrorCode.NONE) -> bodies.FetchResponse:
    return {"throttle_time_ms": throttle_ms, "error_code": int(error),
            "session_id": session_id, "responses": responses}


async def handle(broker: HandlerContext, request: Request[bodies.FetchRequest]
                 ) -> bodies.FetchResponse:
    body = request.body
    connection, client_id = request.connection, request.header.client_id
    context = _Context.open(broker, body)
    context.version = request.version
    if context.error:
        return _response([], error=context.error)
    # Follower fetches (replica id >= 0) are replication, exempt from client quotas.
    quoted = body["replica_id"] < 0
    if quoted:
        throttle_ms = broker.quotas.fetch_throttle_before_read(connection, client_id)
        if throttle_ms > 0:
            return _response([], throttle_ms, context.throttled_session_id)
        body = {**body, "max_bytes": broker.quotas.fetch_max_bytes(
            connection, client_id, body["max_bytes"])}
    else:
        _record_follower_fetch(broker, body["replica_id"], context.items(body))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(body["max_wait_ms"], 0) / 1000
    handler_s = 0.0  # time spent reading, without the long-poll waits
    while True:
        started = time.perf_counter()
        fetch_round = _FetchRound(broker, body, request.version, connection)
        reads = fetch_round.read(context.items(body))
        handler_s += time.perf_counter() - started
        remaining = deadline - loop.time()
        if (fetch_round.total_bytes >= body["min_bytes"] or fetch_round.answer_now
                or remaining <= 0 or broker.shutting_down.is_set()):
            break
        await context.wait(broker, body, remaining)
    if quoted:
        throttle_ms = broker.quotas.fetch_throttle(
            connection, client_id, response_bytes=fetch_round.total_bytes,
            handler_time_ms=handler_s * 1000)
        if throttle_ms > 0:  # Kafka: a throttled fetch carries no data
            return _response([], throttle_ms, context.throttled_session_id)
    elif fetch_round.throttled_bytes:  # only the answered round's bytes are charged (Kafka)
        broker.replicas.leader_throttle.record(fetch_round.throttled_bytes, time.monotonic())
    for topic, nbytes in fetch_round.sent:  # only the round that is answered counts
        broker.probe.bytes_out(topic, nbytes)
    if quoted:  # consumers only: follower fetches are replication, not billed
        broker.metering.fetched(request, body["topics"], fetch_round.sent)
    answered, session_id = context.answer(broker, body, reads)
    return _response(_by_topic(answered), session_id=session_id)
