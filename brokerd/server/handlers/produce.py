"""Produce (0) v3-10: append each partition's record set on the leader.

acks: 0 = no response at all (and, as in Kafka, a failed acks=0 append closes the
connection, the only way to tell the client); 1 = answer after the leader's append;
-1 = all in-sync replicas — with a single replica that is the same moment as acks=1,
except that ``min.insync.replicas`` above the ISR size refuses the write
(NOT_ENOUGH_REPLICAS).  Every storage error becomes that partition's error code; the other
partitions of the request are unaffected.  A retried idempotent batch is answered with
its original offsets (the log reports it as a duplicate and does not store it again).

Quotas: the whole request's size is charged to the (user, client id) produce byte rate and
the handling time to its request quota, after the data is written (Kafka never refuses a
write for a quota); the throttle goes into the response and mutes the connection — with
acks=0 the mute alone does the slowing.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey, ErrorCode, ProtocolError
from brokerd.storage import StorageError

if TYPE_CHECKING:
    from brokerd.server.broker import Broker
    from brokerd.server.request import Request

API_KEY = ApiKey.PRODUCE
MIN_VERSION, MAX_VERSION = 3, 10
VALID_ACKS = (-1, 0, 1)


def partition_error(index: int, error: int, message: str | None = None,
                    leader: tuple[int, int] = (-1, -1)) -> dict[str, Any]:
    return {"index": index, "error_code": int(error), "base_offset": -1,
            "log_append_time_ms": -1, "log_start_offset": -1, "error_message": message,
            "current_leader": {"leader_id": leader[0], "leader_epoch": leader[1]}}


def _append(broker: Broker, topic: str, data: dict[str, Any], acks: int) -> dict[str, Any]:
    index = data["index"]
    records = data["records"]
    hosted, error = broker.leader_partition(topic, index)
    if hosted is None:
        state = broker.cache.partition_state(topic, index)
        leader = (state.leader, state.leader_epoch) if state is not None else (-1, -1)
        return partition_error(index, error, leader=leader)
    if records is None or len(records) == 0:
        return partition_error(index, ErrorCode.CORRUPT_MESSAGE, "empty record set")
    state = broker.cache.partition_state(topic, index)
    isr_size = len(state.isr) if state is not None else 1
    if acks == -1 and isr_size < hosted.log.config.min_insync_replicas:
        return partition_error(index, ErrorCode.NOT_ENOUGH_REPLICAS,
                               f"ISR has {isr_size} < min.insync.replicas")
    try:
        result = hosted.append_as_leader(records)
    except StorageError as exc:
        return partition_error(index, exc.error_code, str(exc))
    except ProtocolError as exc:  # a batch the codec could not even parse
        return partition_error(index, ErrorCode.CORRUPT_MESSAGE, str(exc))
    if not result.duplicate:
        broker.probe.bytes_in(topic, len(records), result.last_offset - result.base_offset + 1)
    return {"index": index, "error_code": 0, "base_offset": result.base_offset,
            "log_append_time_ms": result.log_append_time,
            "log_start_offset": result.log_start_offset, "error_message": None}


async def handle(broker: Broker, request: Request) -> dict[str, Any] | None:
    started = time.perf_counter()
    body = request.body
    acks = body["acks"]
    responses = []
    for topic_data in body["topic_data"]:
        name = topic_data["name"]
        if acks not in VALID_ACKS:
            partitions = [partition_error(p["index"], ErrorCode.INVALID_REQUIRED_ACKS)
                          for p in topic_data["partition_data"]]
        else:
            partitions = [_append(broker, name, p, acks) for p in topic_data["partition_data"]]
        responses.append({"name": name, "partition_responses": partitions})
    throttle_ms = broker.quotas.produce_throttle(
        request.connection, request.header.client_id, request_bytes=request.frame_bytes,
        acks=acks, handler_time_ms=(time.perf_counter() - started) * 1000)
    broker.metering.produced(request, body["topic_data"], responses)
    if acks == 0:
        failed = [p for r in responses for p in r["partition_responses"] if p["error_code"]]
        if failed:
            request.connection.close(f"acks=0 produce failed with error {failed[0]['error_code']}")
        return None
    return {"responses": responses, "throttle_time_ms": throttle_ms}
