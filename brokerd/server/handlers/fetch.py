"""Fetch (1) v4-12: read whole batches up to the high watermark, long-polling when short.

Consumers (``replica_id`` < 0) read up to the high watermark.  Followers (``replica_id``
>= 0, one of the partition's replicas, else NOT_LEADER_OR_FOLLOWER) read up to the log
end: the leader first records their ``fetch_offset`` as their log end offset, which may
advance the high watermark returned in this very response (and complete acks=all
produces) and grow the ISR.

Size limits (KIP-74): ``partition_max_bytes`` caps each partition and ``max_bytes`` the
whole response, except that the first partition with data always returns at least one
whole batch, so a batch larger than the limits never blocks a consumer.

Long poll: when fewer than ``min_bytes`` are available (and no partition has an error)
the request parks until one of its partitions has more for it (an append for a follower,
a high watermark advance for a consumer), ``max_wait_ms`` elapses, or the broker shuts
down; then it reads again.  Fetch sessions (KIP-227) are not kept: every
response says session id 0, which tells clients to keep sending full fetch requests.

Quotas (consumers, not followers): an entity already over its fetch quota is answered at
once with no partitions and the throttle, without reading; otherwise ``max_bytes`` is
lowered to the quota's per-response cap, the log is read, and the response bytes are
charged; if that throttles, the answer is again empty (the bytes are taken back, so only
delivered bytes count) and the connection is muted.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey, ErrorCode
from brokerd.server.transfer import RegionList
from brokerd.storage import StorageError

if TYPE_CHECKING:
    from brokerd.replication.partition import Partition
    from brokerd.server.broker import Broker
    from brokerd.server.request import Request

API_KEY = ApiKey.FETCH
MIN_VERSION, MAX_VERSION = 4, 12


def epoch_error(requested: int, current: int) -> ErrorCode:
    """KIP-320: a client with a stale epoch is fenced; one ahead of us must retry later."""
    if requested == -1 or requested == current:
        return ErrorCode.NONE
    return ErrorCode.FENCED_LEADER_EPOCH if requested < current else ErrorCode.UNKNOWN_LEADER_EPOCH


def _empty(index: int, error: int, hosted: Partition | None = None) -> dict[str, Any]:
    high_watermark = hosted.high_watermark if hosted is not None else -1
    return {"partition_index": index, "error_code": int(error),
            "high_watermark": high_watermark, "last_stable_offset": high_watermark,
            "log_start_offset": hosted.log_start_offset if hosted is not None else -1,
            "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}


class _FetchRound:
    """One pass over the request's partitions, applying the size limits."""

    def __init__(self, broker: Broker, body: dict[str, Any]) -> None:
        self.broker = broker
        self.body = body
        self.replica_id: int = body.get("replica_id", -1)
        self.total_bytes = 0
        self.has_error = False
        self.sent: list[tuple[str, int]] = []  # (topic, bytes) for the metrics

    def read(self) -> list[dict[str, Any]]:
        remaining = max(self.body["max_bytes"], 0)
        responses = []
        for topic in self.body["topics"]:
            partitions = []
            for wanted in topic["partitions"]:
                entry = self._read_partition(topic["topic"], wanted, remaining)
                size = entry["records"].nbytes if isinstance(entry["records"], RegionList) else 0
                remaining = max(remaining - size, 0)
                partitions.append(entry)
            responses.append({"topic": topic["topic"], "partitions": partitions})
        return responses

    def _read_partition(self, topic: str, wanted: dict[str, Any], remaining: int
                        ) -> dict[str, Any]:
        index = wanted["partition"]
        hosted, error = self.broker.leader_partition(topic, index)
        if hosted is not None:
            error = refusal(hosted, wanted, self.replica_id)
        if hosted is None or error:
            self.has_error = True
            return _empty(index, error, hosted)
        limit = min(max(wanted["partition_max_bytes"], 0), remaining)
        try:
            result = hosted.log.read(
                wanted["fetch_offset"], limit,
                max_offset=None if self.replica_id >= 0 else hosted.high_watermark,
                min_one_batch=self.total_bytes == 0)
        except StorageError as exc:
            self.has_error = True
            return _empty(index, exc.error_code, hosted)
        entry = _empty(index, ErrorCode.NONE, hosted)
        if result.regions:
            records = RegionList(list(result.regions))
            entry["records"] = records
            self.total_bytes += records.nbytes
            self.sent.append((topic, records.nbytes))
        return entry


def refusal(hosted: Partition, wanted: dict[str, Any], replica_id: int) -> ErrorCode:
    """Why a fetch of a partition led here is refused: a stale or future epoch, or a
    replica id that is not one of its replicas (NONE: it is served)."""
    error = epoch_error(wanted["current_leader_epoch"], hosted.leader_epoch)
    if not error and replica_id >= 0 and replica_id not in hosted.replicas:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return error


def _record_follower_fetch(broker: Broker, body: dict[str, Any]) -> None:
    """The follower's fetch offsets are its log end offsets: record them before reading
    (a fetch the read refuses is not recorded)."""
    replica_id = body["replica_id"]
    for topic in body["topics"]:
        for wanted in topic["partitions"]:
            hosted = broker.replicas.leader(topic["topic"], wanted["partition"])
            if hosted is not None and not refusal(hosted, wanted, replica_id):
                broker.replicas.record_follower_fetch(hosted, replica_id, wanted["fetch_offset"])


async def _wait_for_data(broker: Broker, body: dict[str, Any], timeout: float) -> None:
    """Park until a partition may have more to read: appends wake followers, high
    watermark advances wake consumers."""
    for_replica = body.get("replica_id", -1) >= 0
    loop = asyncio.get_running_loop()
    woken = loop.create_future()

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    hosted = [p for topic in body["topics"] for wanted in topic["partitions"]
              if (p := broker.replicas.leader(topic["topic"], wanted["partition"])) is not None]
    for partition in hosted:
        partition.add_listener(for_replica, wake)
    shutdown = loop.create_task(broker.shutting_down.wait())
    try:
        await asyncio.wait({woken, shutdown}, timeout=timeout,
                           return_when=asyncio.FIRST_COMPLETED)
    finally:
        shutdown.cancel()
        for partition in hosted:
            partition.remove_listener(for_replica, wake)


def _response(responses: list[dict[str, Any]], throttle_ms: int = 0) -> dict[str, Any]:
    return {"throttle_time_ms": throttle_ms, "error_code": 0, "session_id": 0,
            "responses": responses}


async def handle(broker: Broker, request: Request) -> dict[str, Any]:
    body = request.body
    connection, client_id = request.connection, request.header.client_id
    # Follower fetches (replica id >= 0) are replication, exempt from client quotas.
    quoted = body.get("replica_id", -1) < 0
    if quoted:
        throttle_ms = broker.quotas.fetch_throttle_before_read(connection, client_id)
        if throttle_ms > 0:
            return _response([], throttle_ms)
        body = {**body, "max_bytes": broker.quotas.fetch_max_bytes(
            connection, client_id, body["max_bytes"])}
    else:
        _record_follower_fetch(broker, body)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(body["max_wait_ms"], 0) / 1000
    handler_s = 0.0  # time spent reading, without the long-poll waits
    while True:
        started = time.perf_counter()
        fetch_round = _FetchRound(broker, body)
        responses = fetch_round.read()
        handler_s += time.perf_counter() - started
        remaining = deadline - loop.time()
        if (fetch_round.total_bytes >= body["min_bytes"] or fetch_round.has_error
                or remaining <= 0 or broker.shutting_down.is_set()):
            break
        await _wait_for_data(broker, body, remaining)
    if quoted:
        throttle_ms = broker.quotas.fetch_throttle(
            connection, client_id, response_bytes=fetch_round.total_bytes,
            handler_time_ms=handler_s * 1000)
        if throttle_ms > 0:
            return _response([], throttle_ms)  # Kafka: a throttled fetch carries no data
    for topic, nbytes in fetch_round.sent:  # only the round that is answered counts
        broker.probe.bytes_out(topic, nbytes)
    if quoted:  # consumers only: follower fetches are replication, not billed
        broker.metering.fetched(request, body["topics"], fetch_round.sent)
    return _response(responses)
