"""Follower fetchers: one task per leader broker pulling its partitions over one connection.

Each :class:`ReplicaFetcher` loops: connect to the leader's inter-broker endpoint (resolved
afresh each time, so a restarted leader on a new address is found), then Fetch
(``replica_id`` = our id) from every partition's log end, append what arrives and take the
leader's high watermark.

Truncation (KIP-279 rules in :func:`~brokerd.replication.rules.truncation_offset`): a
partition that starts under a new leader epoch is fetched at once with its
``last_fetched_epoch``, and the leader answers ``diverging_epoch`` instead of records when
our tail is not in its log (*truncation on fetch*, Kafka 2.7+); we truncate and fetch
again.  Why: asking OffsetForLeaderEpoch first cost every leader change a round trip
before the first fetch (0.4-0.9 s from a new leader knowing to its follower fetching in
the 30,000-partition failover, bench/README session 50).  With
``inter.broker.protocol.version`` below 2.7-IV1 (leaders that never answer
``diverging_epoch``), and for a log without epochs, truncation comes first as before.
Connection errors reconnect after a back-off; a partition error (the leader moved on,
fenced epoch) parks only that partition for a back-off, until the controller's new state
moves it (:meth:`FetcherManager.follow` with another leader or epoch).

Fetch sessions (KIP-227): each fetcher keeps one session with its leader
(:class:`FollowerSession`).  After a full fetch that created it, requests are
incremental: they name only partitions whose fetch fields changed (new log end, epoch,
log start, byte limit) or that joined, and list those that left (parked, truncating,
moved away) in ``forgotten_topics_data``; a partition absent from the response is
unchanged.  The leader keeps counting every session partition as fetched at its last
named offset (our log end), so idle partitions cost neither side anything and still keep
us in the ISR.  A session error (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH),
a reconnect or any failure falls back to a full fetch that replaces the session.

Not thread-safe: the loop thread only.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from brokerd.protocol import ApiKey, ErrorCode, fetch_v12
from brokerd.replication import rules
from brokerd.replication.client import PLAINTEXT_LINK, InterBrokerConnection, InterBrokerLink
from brokerd.replication.fetch_sessions import INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch
from brokerd.replication.partition import NO_LEADER, Partition
from brokerd.replication.throttle import ByteRateLimit
from brokerd.storage import StorageError

log = logging.getLogger(__name__)

FETCH_VERSION = 12  # the last version naming topics (v13 uses topic ids)
EPOCH_VERSION = 4
# Kafka's replica.fetch.backoff.ms is 1 s; half that brings a restarted leader back sooner.
BACKOFF_S = 0.5
# A refused partition waits this long first, then twice as long each time it is refused
# again, up to BACKOFF_S.  Why: in a failover the controller's own broker follows its new
# leaders at once, while the other survivor applies its leaderships a slice at a time and
# answers NOT_LEADER_OR_FOLLOWER meanwhile (for up to 3.5 s after the controller's writes
# in a 30,000-partition failover); a flat 0.5 s made acks=all writes to those partitions
# wait up to half a second more after their leader had applied.
FIRST_BACKOFF_S = 0.1
# Top-level Fetch errors that only mean "start a new session" (KIP-227).
SESSION_ERRORS = frozenset({ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
                            ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                            ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR})
# Fetch fields are recomputed when something we do changes them (append, truncation, a
# park, a new epoch); a log start offset moved by retention tells nobody, so every
# partition's fields are recomputed this often too, a slice per round in proportion to the
# time passed, done within the first half of the period (all at once was 10,000
# partitions in one step of a follower's loop at 30,000 partitions).
FULL_CHECK_S = 10.0
# A parked batch is logged as one line naming this many of its partitions: a leader that
# hands 10,000 leaderships away answers each of them NOT_LEADER_OR_FOLLOWER until the new
# states arrive, and a line per partition (21,000 on two brokers in one controlled
# shutdown at 30,000 partitions) cost the loops that were taking the leaderships over.
PARKED_EXAMPLES = 3
RETRIABLE = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH,
             ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
             ErrorCode.REPLICA_NOT_AVAILABLE}

Key = tuple[str, int]
Endpoint = tuple[str, int]


@dataclass(frozen=True)
class FetchSettings:
    """The follower's ``replica.*`` keys."""

    broker_id: int
    wait_max_ms: int = 500
    partition_max_bytes: int = 1_048_576
    response_max_bytes: int = 10_485_760
    socket_timeout_ms: int = 30_000
    # TLS and SASL of the inter-broker listener (brokerd.replication.inter_broker_auth).
    link: InterBrokerLink = PLAINTEXT_LINK
    # False: ask OffsetForLeaderEpoch before fetching (rules.truncates_on_fetch).
    truncation_on_fetch: bool = True


@dataclass
class _Fetching:
    """One partition's place in a fetcher."""

    partition: Partition
    leader_epoch: int
    needs_truncation: bool = True
    parked_until: float = 0.0
    throttled: bool = field(default=False)
    parked_error: int = 0  # the last error that parked it (logged when it changes)
    backoff_s: float = 0.0  # its last park's wait (0: not refused since it last fetched)


class FollowerSession:
    """The follower's side of its fetch session with one leader: the session id, the
    next epoch, and the fetch fields the leader holds for each partition."""

    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self.sent: dict[Key, dict[str, Any]] = {}

    def request(self, fields: dict[Key, dict[str, Any]], changed: Iterable[Key]
                ) -> tuple[dict[Key, dict[str, Any]], list[Key]]:
        """The partitions to name and to forget for a fetch of ``fields`` (every partition
        fetched now), given those whose fields may have changed since the leader last
        heard: all of them when full, else only what changed."""
        if self.epoch == INITIAL_EPOCH:
            return dict(fields), []
        named = {key: fields[key] for key in changed
                 if key in fields and self.sent.get(key) != fields[key]}
        return named, [key for key in changed if key not in fields and key in self.sent]

    def answered(self, response: dict[str, Any], named: dict[Key, dict[str, Any]],
                 forgotten: list[Key]) -> bool:
        """Follow the leader's answer; False when it refused the session (the next fetch
        is then full, replacing it)."""
        if response["error_code"]:
            self.reset()
            return False
        if response["session_id"] == INVALID_SESSION_ID:  # none created, or closed
            self.session_id, self.epoch, self.sent = INVALID_SESSION_ID, INITIAL_EPOCH, {}
        elif self.epoch == INITIAL_EPOCH:
            self.session_id, self.epoch, self.sent = response["session_id"], 1, dict(named)
        else:
            self.epoch = next_epoch(self.epoch)
            self.sent.update(named)
            for key in forgotten:
                self.sent.pop(key, None)
        return True

    def reset(self) -> None:
        """Any doubt: the next fetch is full and closes the current session (Kafka's
        "close existing")."""
        self.epoch, self.sent = INITIAL_EPOCH, {}


class ReplicaFetcher:
    """Fetches the partitions this broker follows from one leader broker."""

    def __init__(self, leader_id: int, settings: FetchSettings,
                 resolve: Callable[[int], Endpoint | None], throttle: ByteRateLimit) -> None:
        self.leader_id = leader_id
        self._settings = settings
        self._resolve = resolve
        self._throttle = throttle
        self.partitions: dict[Key, _Fetching] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._connection: InterBrokerConnection | None = None
        self.session = FollowerSession()
        # The fetch fields of every partition fetched now (what the session holds), kept
        # up to date from the few partitions that may have changed, so an idle round
        # costs nothing per partition.
        self._fields: dict[Key, dict[str, Any]] = {}
        self._stale: set[Key] = set()  # fields to recompute before the next fetch
        self._held: set[Key] = set()  # throttled: rechecked each round
        self._truncating: set[Key] = set()  # to truncate before fetching (see _truncate)
        # (parked until, key): rechecked once due, not every round (a leader handing
        # 10,000 leaderships away parks them all, and rechecking each one twice per round
        # was seconds of a survivor's loop in a controlled shutdown at 30,000 partitions)
        self._parked: list[tuple[float, Key]] = []
        self._changed: set[Key] = set()  # fields changed since the leader last heard
        self._next_full_check = 0.0
        self._rechecks: list[Key] = []  # what this period's full check has still to cover
        self._rechecks_per_s = 0.0
        self._last_refresh = 0.0
        self._newly_parked: dict[int, list[str]] = {}  # error -> partitions, logged per answer

    def add(self, partition: Partition, throttled: bool) -> None:
        key = (partition.topic, partition.index)
        on_fetch = (self._settings.truncation_on_fetch
                    and partition.log.leader_epoch_cache.latest_epoch >= 0)
        self.partitions[key] = _Fetching(partition, partition.leader_epoch,
                                         needs_truncation=not on_fetch, throttled=throttled)
        self._stale.add(key)
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def set_throttled(self, key: Key, throttled: bool) -> None:
        fetching = self.partitions.get(key)
        if fetching is not None and fetching.throttled != throttled:
            fetching.throttled = throttled
            self._stale.add(key)  # only then: every topic event re-applies the flag

    def remove(self, key: Key) -> None:
        self.partitions.pop(key, None)
        self._stale.add(key)

    async def close(self) -> None:
        self.partitions.clear()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._connection is not None:
            self._connection.close()

    # ---- the loop ------------------------------------------------------------------

    async def _run(self) -> None:
        while self.partitions:
            try:
                connection = await self._connect()
                if connection is None:
                    await asyncio.sleep(BACKOFF_S)
                    continue
                await self._truncate(connection)
                if not await self._fetch(connection):
                    await self._idle()
            except ConnectionError as exc:
                log.info("replica fetcher for broker %d: %s; retrying", self.leader_id, exc)
                self._connection = None
                self.session.reset()
                await asyncio.sleep(BACKOFF_S)
            except Exception:
                log.exception("replica fetcher for broker %d failed; retrying", self.leader_id)
                if self._connection is not None:
                    self._connection.close()
                self._connection = None
                self.session.reset()
                await asyncio.sleep(BACKOFF_S)
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def _connect(self) -> InterBrokerConnection | None:
        if self._connection is None:
            endpoint = self._resolve(self.leader_id)
            if endpoint is None:
                return None  # the leader is not registered (dead): fetch nothing
            self._connection = await InterBrokerConnection.open(
                endpoint[0], endpoint[1], f"broker-{self._settings.broker_id}-fetcher",
                self._settings.socket_timeout_ms / 1000, self._settings.link)
        return self._connection

    async def _idle(self) -> None:
        """Nothing fetchable now (all parked or throttled): wait for a change or a tick."""
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), BACKOFF_S)
        except TimeoutError:
            pass

    def _refresh(self, now: float) -> None:
        """Bring :attr:`_fields` up to date: recompute the stale, throttled and newly
        unparked partitions (and the full check's slice), noting which fields
        changed, and sort out the partitions that cannot be fetched now: parked ones wait
        in :attr:`_parked` until due, those to truncate in :attr:`_truncating` (truncation
        makes them stale again).  Others come back through :meth:`add` (a new leader or
        epoch) or :meth:`set_throttled`."""
        self._stale.update(self._full_check_slice(now))
        keys, self._stale = self._stale | self._held, set()
        while self._parked and self._parked[0][0] <= now:
            keys.add(heapq.heappop(self._parked)[1])
        for key in keys:
            fetching = self.partitions.get(key)
            fields = self._fields_of(fetching, now) if fetching is not None else None
            self._held.discard(key)
            self._truncating.discard(key)
            if fetching is None:
                pass
            elif fetching.parked_until > now:
                heapq.heappush(self._parked, (fetching.parked_until, key))
            elif fetching.needs_truncation:
                self._truncating.add(key)
            elif fetching.throttled:
                self._held.add(key)
            if fields is None:
                if self._fields.pop(key, None) is not None:
                    self._changed.add(key)
            elif self._fields.get(key) != fields:
                self._fields[key] = fields
                self._changed.add(key)

    def _full_check_slice(self, now: float) -> list[Key]:
        """The partitions whose turn in the periodic full check (``FULL_CHECK_S``) has come."""
        if not self._rechecks and now >= self._next_full_check:
            self._next_full_check = now + FULL_CHECK_S
            self._rechecks = list(self.partitions)
            self._rechecks_per_s = len(self._rechecks) / (FULL_CHECK_S / 2)
        count = math.ceil(self._rechecks_per_s * (now - self._last_refresh))
        self._last_refresh = now
        if count <= 0:
            return []
        taken = self._rechecks[-count:]
        del self._rechecks[-count:]
        return taken

    def _fields_of(self, fetching: _Fetching, now: float) -> dict[str, Any] | None:
        """What a fetch asks of this partition now; None while it must not be fetched."""
        partition = fetching.partition
        if (fetching.needs_truncation or fetching.parked_until > now
                or partition.leader_epoch != fetching.leader_epoch):
            return None
        max_bytes = self._settings.partition_max_bytes
        if fetching.throttled:
            max_bytes = self._throttle.allowance(now, max_bytes)
            if max_bytes <= 0:
                return None
        return {"current_leader_epoch": fetching.leader_epoch,
                "fetch_offset": partition.log_end_offset,
                "last_fetched_epoch": partition.log.leader_epoch_cache.latest_epoch,
                "log_start_offset": partition.log_start_offset,
                "partition_max_bytes": max_bytes}

    # ---- truncation ----------------------------------------------------------------

    async def _truncate(self, connection: InterBrokerConnection) -> None:
        now = time.monotonic()
        self._refresh(now)
        pending = [(key, f) for key in self._truncating
                   if (f := self.partitions.get(key)) is not None and f.needs_truncation
                   and f.parked_until <= now and f.partition.leader_epoch == f.leader_epoch]
        asked = []
        for key, fetching in pending:
            log_ = fetching.partition.log
            if log_.leader_epoch_cache.latest_epoch < 0:
                self._truncate_partition(key, fetching, fetching.partition.high_watermark)
            else:
                asked.append((key, fetching))
        if not asked:
            return
        topics: dict[str, list[dict[str, Any]]] = {}
        requested: dict[Key, tuple[_Fetching, int]] = {}
        for (topic, index), fetching in asked:
            latest = fetching.partition.log.leader_epoch_cache.latest_epoch
            requested[(topic, index)] = (fetching, latest)
            topics.setdefault(topic, []).append({
                "partition": index, "current_leader_epoch": fetching.leader_epoch,
                "leader_epoch": latest})
        body = {"replica_id": self._settings.broker_id, "topics": [
            {"topic": topic, "partitions": partitions} for topic, partitions in topics.items()]}
        response = await connection.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, EPOCH_VERSION, body)
        for topic_answer in response["topics"]:
            for answer in topic_answer["partitions"]:
                key = (topic_answer["topic"], answer["partition"])
                if key not in requested:
                    continue
                fetching, latest = requested[key]
                if self.partitions.get(key) is not fetching or not fetching.needs_truncation:
                    continue  # replaced (new leader or epoch) while the request was out
                if answer["error_code"]:
                    self._park(key, fetching, answer["error_code"])
                    continue
                self._truncate_to_answer(key, fetching, latest, answer["leader_epoch"],
                                         answer["end_offset"])
        self._report_parked()

    def _truncate_to_answer(self, key: Key, fetching: _Fetching, requested_epoch: int,
                            epoch: int, end_offset: int) -> None:
        """Truncate where the leader's (``epoch``, ``end_offset``) for our
        ``requested_epoch`` says our logs part (an OffsetForLeaderEpoch answer, or a Fetch
        answer's ``diverging_epoch``)."""
        partition = fetching.partition
        own_end = partition.log.leader_epoch_cache.end_offset_for(
            epoch, partition.log_end_offset)[1] if epoch >= 0 else -1
        self._truncate_partition(key, fetching, rules.truncation_offset(
            requested_epoch, epoch, end_offset, partition.log_end_offset, own_end,
            partition.high_watermark))

    def _truncate_partition(self, key: Key, fetching: _Fetching, offset: int) -> None:
        self._stale.add(key)
        partition = fetching.partition
        if offset < partition.log_end_offset:
            log.info("truncating %s-%d from %d to %d before following epoch %d",
                     partition.topic, partition.index, partition.log_end_offset, offset,
                     fetching.leader_epoch)
        partition.truncate_to(offset)  # past the end: only epochs that never got data
        fetching.needs_truncation = False

    def _park(self, key: Key, fetching: _Fetching, error: int) -> None:
        # Reported once per new error, not per retry: a partition parked for minutes (a
        # follower that never rejoins the ISR) must leave a trace without flooding the log.
        if error != fetching.parked_error:
            self._newly_parked.setdefault(error, []).append(
                f"{key[0]}-{key[1]} (epoch {fetching.leader_epoch})")
        fetching.parked_error = error
        fetching.backoff_s = (min(BACKOFF_S, 2 * fetching.backoff_s) if fetching.backoff_s
                              else FIRST_BACKOFF_S)
        fetching.parked_until = time.monotonic() + fetching.backoff_s
        self._stale.add(key)

    def _report_parked(self) -> None:
        """One line per error for the partitions an answer newly parked."""
        for error, partitions in self._newly_parked.items():
            more = len(partitions) - PARKED_EXAMPLES
            log.info("leader %d answered error %d for %d partition(s): %s%s; retrying "
                     "after %.1f s, doubling up to %.1f s", self.leader_id, error,
                     len(partitions), ", ".join(partitions[:PARKED_EXAMPLES]),
                     f" and {more} more" if more > 0 else "", FIRST_BACKOFF_S, BACKOFF_S)
        self._newly_parked.clear()

    # ---- fetching ------------------------------------------------------------------

    async def _fetch(self, connection: InterBrokerConnection) -> bool:
        """One Fetch round; False when no partition was fetchable."""
        self._refresh(time.monotonic())
        if not self._fields:
            return False
        named, forgotten = self.session.request(self._fields, self._changed)
        body = {"cluster_id": None, "replica_id": self._settings.broker_id,
                "max_wait_ms": self._settings.wait_max_ms, "min_bytes": 1,
                "max_bytes": self._settings.response_max_bytes, "isolation_level": 0,
                "session_id": self.session.session_id, "session_epoch": self.session.epoch,
                "forgotten_topics_data": _by_topic(dict.fromkeys(forgotten), lambda i, _: i),
                "rack_id": "", "topics": _by_topic(named, lambda i, w: {"partition": i, **w})}
        response = await connection.request(ApiKey.FETCH, FETCH_VERSION, body,
                                            extra_wait_s=self._settings.wait_max_ms / 1000,
                                            codec=fetch_v12)
        if not self.session.answered(response, named, forgotten):
            if response["error_code"] in SESSION_ERRORS:
                log.info("leader %d refused fetch session %d (error %d); fetching in full",
                         self.leader_id, body["session_id"], response["error_code"])
                return True
            # Not about the session (CLUSTER_AUTHORIZATION_FAILED: our inter-broker
            # principal lacks ClusterAction): asking again at once would spin.
            log.warning("leader %d refused replica fetches (error %d); retrying in %.1f s",
                        self.leader_id, response["error_code"], BACKOFF_S)
            await asyncio.sleep(BACKOFF_S)
            return True
        self._changed.clear()
        # Only this task changes _fields, so it still holds what this request asked.
        for topic_answer in response["responses"]:
            for answer in topic_answer["partitions"]:
                key = (topic_answer["topic"], answer["partition_index"])
                fields, fetching = self._fields.get(key), self.partitions.get(key)
                if fields is not None and fetching is not None:
                    self._apply(key, fetching, fields, answer)
        self._report_parked()
        return True

    def _apply(self, key: Key, fetching: _Fetching, fields: dict[str, Any],
               answer: dict[str, Any]) -> None:
        partition, fetch_offset = fetching.partition, fields["fetch_offset"]
        if (partition.leader_epoch != fetching.leader_epoch or fetching.needs_truncation
                or partition.log_end_offset != fetch_offset):
            return  # the partition moved on while the fetch was in flight
        diverging = answer.get("diverging_epoch")
        if diverging is not None:  # our tail is not the leader's: no records came
            self._truncate_to_answer(key, fetching, fields["last_fetched_epoch"],
                                     diverging["epoch"], diverging["end_offset"])
            return
        error = answer["error_code"]
        if error == ErrorCode.OFFSET_OUT_OF_RANGE:
            self._stale.add(key)
            self._out_of_range(fetching, answer["log_start_offset"])
            return
        if error:
            self._park(key, fetching, error)
            return
        records = answer["records"]
        data = memoryview(records) if records else memoryview(b"")
        if len(data):
            self._stale.add(key)  # a new log end to ask from
        try:
            partition.append_as_follower(data, answer["high_watermark"])
        except StorageError as exc:
            log.warning("%s-%d: cannot append fetched data at %d: %s", key[0], key[1],
                        fetch_offset, exc)
            self._park(key, fetching, int(exc.error_code))
            return
        fetching.parked_error, fetching.backoff_s = 0, 0.0
        if fetching.throttled:
            self._throttle.charge(len(data), time.monotonic())

    @staticmethod
    def _out_of_range(fetching: _Fetching, leader_log_start: int) -> None:
        """Below the leader's log start: restart empty there.  Past the leader's end: our
        tail diverged, truncate by epoch before the next fetch."""
        partition = fetching.partition
        if 0 <= leader_log_start and partition.log_end_offset < leader_log_start:
            log.info("%s-%d: log end %d is below the leader's log start %d; restarting there",
                     partition.topic, partition.index, partition.log_end_offset,
                     leader_log_start)
            partition.log.truncate_fully_and_start_at(leader_log_start)
        else:
            fetching.needs_truncation = True


def _by_topic(items: dict[Key, Any], entry: Callable[[int, Any], Any]
              ) -> list[dict[str, Any]]:
    """Group ``(topic, partition) -> value`` into the request's per-topic arrays."""
    topics: dict[str, list[Any]] = {}
    for (topic, index), value in items.items():
        topics.setdefault(topic, []).append(entry(index, value))
    return [{"topic": topic, "partitions": partitions} for topic, partitions in topics.items()]


class FetcherManager:
    """Which leader each followed partition fetches from; one :class:`ReplicaFetcher` each."""

    def __init__(self, settings: FetchSettings, resolve: Callable[[int], Endpoint | None]
                 ) -> None:
        self.settings = settings
        self._resolve = resolve
        self._fetchers: dict[int, ReplicaFetcher] = {}
        self._leader_of: dict[Key, int] = {}
        self.throttle = ByteRateLimit()
        self._closed = False

    def follow(self, partition: Partition, throttled: bool = False) -> None:
        """(Re)start fetching ``partition`` from its current leader, truncating first."""
        key = (partition.topic, partition.index)
        self.forget(key)
        if partition.leader_id == NO_LEADER or self._closed:
            return
        fetcher = self._fetchers.get(partition.leader_id)
        if fetcher is None:
            fetcher = ReplicaFetcher(partition.leader_id, self.settings, self._resolve,
                                     self.throttle)
            self._fetchers[partition.leader_id] = fetcher
        fetcher.add(partition, throttled)
        self._leader_of[key] = partition.leader_id

    def set_throttled(self, key: Key, throttled: bool) -> None:
        leader = self._leader_of.get(key)
        if leader is not None:
            self._fetchers[leader].set_throttled(key, throttled)

    def forget(self, key: Key) -> None:
        leader = self._leader_of.pop(key, None)
        if leader is not None:
            self._fetchers[leader].remove(key)

    def fetching(self, key: Key) -> bool:
        return key in self._leader_of

    async def close(self) -> None:
        """Stop fetching for good (the broker is leaving): later :meth:`follow` calls
        only forget."""
        self._closed = True
        fetchers, self._fetchers = list(self._fetchers.values()), {}
        self._leader_of.clear()
        await asyncio.gather(*(fetcher.close() for fetcher in fetchers))
