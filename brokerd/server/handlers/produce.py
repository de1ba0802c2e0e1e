"""Produce (0) v3-12: append each partition's record set on the leader.

acks: 0 = no response at all (and, as in Kafka, a failed acks=0 append closes the
connection, the only way to tell the client); 1 = answer after the leader's append;
-1 = all in-sync replicas: ``min.insync.replicas`` above the leader's ISR size refuses
the write before storing anything (NOT_ENOUGH_REPLICAS); otherwise the request parks
(Kafka's produce purgatory) until the high watermark passes every partition's last
offset — the partitions wait concurrently — and answers REQUEST_TIMED_OUT for a partition
still short at ``timeout_ms``, NOT_LEADER_OR_FOLLOWER if leadership moved meanwhile, and
NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below the minimum before it committed.
Every storage error becomes that partition's error code; the other partitions of the
request are unaffected.  A partition refused for particular records (a keyless record in a
compacted topic, a timestamp outside the CreateTime window) names them in v8+
``record_errors`` (KIP-467), so the client fails only those records as invalid.  A
retried idempotent batch is answered with its original offsets (the log reports it as a
duplicate and does not store it again).

Transactional batches are checked with the transaction coordinator first (KIP-890, see
:func:`~brokerd.server.txn_service.verify_produce`); from v12 (transaction version 2) the
leader adds the partition to the producer's transaction itself.  v11 changes nothing here
(it only lets the broker answer TRANSACTION_ABORTABLE, which this broker never does).

Quotas: the whole request's size is charged to the (user, client id) produce byte rate and
the handling time to its request quota, after the data is written (Kafka never refuses a
write for a quota); the throttle goes into the response and mutes the connection — with
acks=0 the mute alone does the slowing.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from brokerd.protocol import ApiKey, ErrorCode, ProtocolError
from brokerd.protocol.records import parse_batch_header
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.metering import ProducedBytes
from brokerd.server.request import Later
from brokerd.server.tenancy import ApiNames, Gate, Names
from brokerd.server.tenancy_rules import TOPIC_DENIED, TXN_DENIED, every_produce_partition
from brokerd.server.txn_service import verify_produce
from brokerd.storage import StorageError

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.replication.partition import Partition
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.PRODUCE
MIN_VERSION, MAX_VERSION = 3, 12
IMPLICIT_ADD_SINCE = 12  # KIP-890 part 2: the leader adds the partition to the transaction
# Where this API's names live and which ACL operations they need (server.tenancy).
TENANCY = ApiNames(
    request=(Names(("topic_data", "name"), Rt.TOPIC, Op.WRITE, TOPIC_DENIED),
             Names(("transactional_id",), Rt.TRANSACTIONAL_ID)),
    response=(Names(("responses", "name"), Rt.TOPIC),),
    gates=(Gate(Rt.TRANSACTIONAL_ID, Op.WRITE, TXN_DENIED, every_produce_partition,
                ("transactional_id",)),))
VALID_ACKS = (-1, 0, 1)


def partition_error(index: int, error: int, message: str | None = None,
                    leader: tuple[int, int] = (-1, -1),
                    record_errors: tuple[tuple[int, str], ...] = ()
                    ) -> bodies.ProduceResponsePartitionResponse:
    return {"index": index, "error_code": int(error), "base_offset": -1,
            "log_append_time_ms": -1, "log_start_offset": -1,
            "record_errors": [{"batch_index": batch_index, "batch_index_error_message": text}
                              for batch_index, text in record_errors],
            "error_message": message,
            "current_leader": {"leader_id": leader[0], "leader_epoch": leader[1]}}


def _append(broker: HandlerContext, topic: str, data: bodies.ProduceRequestPartitionData,
            acks: int) -> tuple[bodies.ProduceResponsePartitionResponse,
                                tuple[Partition, int] | None]:
    """Append one partition's data: its response, and for acks=all what to await (the
    partition and the last offset the high watermark must pass)."""
    index = data["index"]
    records = data["records"]
    hosted, error = broker.leader_partition(topic, index)
    if hosted is None:
        state = broker.cache.partition_state(topic, index)
        leader = (state.leader, state.leader_epoch) if state is not None else (-1, -1)
        return partition_error(index, error, leader=leader), None
    if records is None or len(records) == 0:
        return partition_error(index, ErrorCode.CORRUPT_MESSAGE, "empty record set"), None
    shortfall = hosted.min_isr_violation() if acks == -1 else None
    if shortfall is not None:
        return partition_error(index, ErrorCode.NOT_ENOUGH_REPLICAS, shortfall), None
    try:
        result = hosted.append_as_leader(records)
    except StorageError as exc:  # KIP-467: record_errors names the records at fault
        return partition_error(index, exc.error_code, str(exc),
                               record_errors=exc.record_errors), None
    except ProtocolError as exc:  # a batch the codec could not even parse
        return partition_error(index, ErrorCode.CORRUPT_MESSAGE, str(exc)), None
    if not result.duplicate:
        broker.probe.bytes_in(topic, len(records), result.last_offset - result.base_offset + 1)
    answer: bodies.ProduceResponsePartitionResponse = {
        "index": index, "error_code": 0, "base_offset": result.base_offset,
        "log_append_time_ms": result.log_append_time,
        "log_start_offset": result.log_start_offset, "record_errors": [], "error_message": None}
    return answer, ((hosted, result.last_offset) if acks == -1 else None)


@dataclass
class _Commit:
    """An appended partition's wait for its replicas: registered at the append, so the
    wait and its timeout run from then however late the answer is awaited."""

    answer: bodies.ProduceResponsePartitionResponse
    hosted: Partition
    committed: asyncio.Future[bool]
    deadline: float  # loop time
    timeout_s: float


async def _until_done_or_deadline(committed: asyncio.Future[bool], deadline: float) -> None:
    """Wait for ``committed``, cancelling it at ``deadline`` (loop time).  A timer and a
    plain await: ``asyncio.wait`` with a timeout cost several times as much on every
    acks=all request.  A cancellation of the waiting task itself still propagates."""
    loop = asyncio.get_running_loop()
    timer = loop.call_at(deadline, committed.cancel)
    try:
        await committed
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
    finally:
        timer.cancel()


async def _await_commit(commit: _Commit) -> None:
    """Park until the high watermark passes the appended data; turn the answer into the
    error when it does not (timeout, leadership lost, ISR too small).  A stopping broker
    needs no watch of its own here: it hands leadership away or closes its replicas
    before it waits for in-flight requests, and either completes the wait with False."""
    answer, hosted, committed = commit.answer, commit.hosted, commit.committed
    if not committed.done():
        await _until_done_or_deadline(committed, commit.deadline)
    index = answer["index"]
    if committed.cancelled():  # the deadline passed first
        answer.update(partition_error(index, ErrorCode.REQUEST_TIMED_OUT,
                                      f"not replicated to the ISR in {commit.timeout_s:g} s"))
    elif not committed.result():
        answer.update(partition_error(index, ErrorCode.NOT_LEADER_OR_FOLLOWER))
    elif (shortfall := hosted.min_isr_violation()) is not None:
        answer.update(partition_error(index, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                                      shortfall))


async def handle(broker: HandlerContext, request: Request[bodies.ProduceRequest]
                 ) -> bodies.ProduceResponse | Later[bodies.ProduceResponse | None] | None:
    """Append every partition's data; an acks=all request that must wait for replicas
    is answered :class:`Later`, so the connection appends its next request meanwhile."""
    started = time.perf_counter()
    body = request.body
    acks = body["acks"]
    timeout_s = max(body["timeout_ms"], 0) / 1000
    deadline = asyncio.get_running_loop().time() + timeout_s
    responses: list[bodies.ProduceResponseResponse] = []
    commits = []
    sent = ProducedBytes()
    transactional = bool(body["transactional_id"])
    for topic_data in body["topic_data"]:
        name = topic_data["name"]
        partitions: list[bodies.ProduceResponsePartitionResponse]
        sent.sizes.append([len(p["records"] or b"") for p in topic_data["partition_data"]])
        if acks not in VALID_ACKS:
            partitions = [partition_error(p["index"], ErrorCode.INVALID_REQUIRED_ACKS)
                          for p in topic_data["partition_data"]]
        else:
            partitions = []
            for data in topic_data["partition_data"]:
                refused = await verify_produce(broker, body["transactional_id"], name, data,
                                               add=request.version >= IMPLICIT_ADD_SINCE)
                if refused is not None:  # KIP-890: not in this producer's transaction
                    partitions.append(partition_error(data["index"], refused))
                    continue
                answer, wait = _append(broker, name, data, acks)
                partitions.append(answer)
                if transactional and sent.producer_id is None and answer["error_code"] == 0:
                    sent.producer_id = _producer_id(data)
                if wait is not None:
                    hosted, last_offset = wait
                    commits.append(_Commit(answer, hosted, hosted.wait_for_commit(last_offset),
                                           deadline, timeout_s))
        responses.append({"name": name, "partition_responses": partitions})
    handler_ms = (time.perf_counter() - started) * 1000  # the purgatory wait is not work
    if any(not commit.committed.done() for commit in commits):
        _let_go_of_records(body)
        return Later(_answer_when_committed(broker, request, responses, commits, sent,
                                            handler_ms))
    for commit in commits:  # committed already (or failed): settle the answers now
        await _await_commit(commit)
    return _answer(broker, request, responses, sent, handler_ms)


def _producer_id(appended: bodies.ProduceRequestPartitionData) -> int | None:
    """The producer id of a partition's appended batches (one producer per request)."""
    records = appended["records"]
    return parse_batch_header(records, 0).producer_id if records is not None else None


def _let_go_of_records(body: bodies.ProduceRequest) -> None:
    """Drop the request's record sets (memoryviews of its frame) once appended, so that
    the frame's memory is freed or reused while this request waits for its replicas (see
    :class:`~brokerd.server.metering.ProducedBytes`)."""
    for topic_data in body["topic_data"]:
        for data in topic_data["partition_data"]:
            data["records"] = None


async def _answer_when_committed(broker: HandlerContext, request: Request[bodies.ProduceRequest],
                                 responses: list[bodies.ProduceResponseResponse],
                                 commits: list[_Commit], sent: ProducedBytes, handler_ms: float
                                 ) -> bodies.ProduceResponse | None:
    if len(commits) == 1:  # one partition, the usual acks=all request: no Task to wrap it
        await _await_commit(commits[0])
    else:
        await asyncio.gather(*(_await_commit(commit) for commit in commits))
    return _answer(broker, request, responses, sent, handler_ms)


def _answer(broker: HandlerContext, request: Request[bodies.ProduceRequest],
            responses: list[bodies.ProduceResponseResponse], sent: ProducedBytes,
            handler_ms: float) -> bodies.ProduceResponse | None:
    """The quotas' throttle, the metering and the response, once every append settled."""
    body = request.body
    acks = body["acks"]
    throttle_ms = broker.quotas.produce_throttle(
        request.connection, request.header.client_id, request_bytes=request.frame_bytes,
        acks=acks, handler_time_ms=handler_ms)
    broker.metering.produced(request, sent, responses)
    if acks == 0:
        failed = [p for r in responses for p in r["partition_responses"] if p["error_code"]]
        if failed:
            request.connection.close(f"acks=0 produce failed with error {failed[0]['error_code']}")
        return None
    return {"responses": responses, "throttle_time_ms": throttle_ms}
