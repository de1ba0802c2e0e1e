"""ListOffsets (2) v1-7: offsets by timestamp, earliest (-2), latest (-1), max timestamp (-3).

"Latest" is the high watermark, or with ``isolation_level`` read_committed the last stable
offset (a timestamp answer is bounded the same way).  The log indexes batches, Kafka answers with records: a
timestamp lookup finds the first batch whose max timestamp is at or after the target (the
max-timestamp lookup, the batch holding the log's newest timestamp), then decodes that one
batch for the first record at or after the target.  None -> offset -1, Kafka's "no such
offset" answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from brokerd.protocol import ApiKey
from brokerd.protocol.records import decode_records, parse_batch_header
from brokerd.replication.rules import epoch_error
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.tenancy import ApiNames, Names
from brokerd.server.tenancy_rules import RESPONSE_TOPICS, TOPIC_DENIED
from brokerd.storage import Log, StorageError

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.replication.partition import Partition
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.LIST_OFFSETS
MIN_VERSION, MAX_VERSION = 1, 7
# Where this API's names live and which ACL operations they need (server.tenancy).
TENANCY = ApiNames(
    request=(Names(("topics", "name"), Rt.TOPIC, Op.DESCRIBE, TOPIC_DENIED),),
    response=(RESPONSE_TOPICS,))
LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
READ_COMMITTED = 1


def max_timestamp_offset(log: Log) -> tuple[int, int] | None:
    """(offset, timestamp) of the newest timestamp in the log, from the segments' tracked
    maxima (no scan).  Adapter until the log offers this itself."""
    best = None
    for segment in log.segments:
        if segment.max_timestamp >= 0 and (best is None
                                           or segment.max_timestamp > best.max_timestamp):
            best = segment
    return None if best is None else (best.offset_of_max_timestamp, best.max_timestamp)


def exact_record(log: Log, batch_offset: int, timestamp: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record at or after ``timestamp`` inside the batch
    holding ``batch_offset``: the log indexes batches, Kafka answers with a record."""
    read = log.read(batch_offset, 1, min_one_batch=True)
    if not read.regions:
        return None
    data = read.regions[0].read()
    header = parse_batch_header(data, 0)
    for record in decode_records(data, 0, header):
        if record.offset >= batch_offset and record.timestamp >= timestamp:
            return record.offset, record.timestamp
    return None


def lookup(hosted: Partition, timestamp: int, read_committed: bool = False) -> tuple[int, int]:
    """(timestamp, offset) answered for one partition; (-1, -1) when there is none."""
    end = hosted.log.last_stable_offset if read_committed else hosted.high_watermark
    if timestamp == EARLIEST:
        return -1, hosted.log_start_offset
    if timestamp == LATEST:
        return -1, end
    if timestamp == MAX_TIMESTAMP:
        found = max_timestamp_offset(hosted.log)
        target = found[1] if found is not None else -1
    else:
        found = hosted.log.offset_for_timestamp(timestamp)
        target = timestamp
    if found is not None:
        found = exact_record(hosted.log, found[0], target) or found
    if found is None or found[0] >= end:
        return -1, -1
    offset, batch_timestamp = found
    return batch_timestamp, offset


def _partition(broker: HandlerContext, topic: str, wanted: bodies.ListOffsetsRequestPartition,
               read_committed: bool) -> bodies.ListOffsetsResponsePartition:
    index = wanted["partition_index"]
    hosted, error = broker.leader_partition(topic, index, wanted["current_leader_epoch"])
    if hosted is not None:
        error = epoch_error(wanted["current_leader_epoch"], hosted.leader_epoch)
    if hosted is None or error:
        return {"partition_index": index, "error_code": int(error)}
    try:
        timestamp, offset = lookup(hosted, wanted["timestamp"], read_committed)
    except StorageError as exc:
        return {"partition_index": index, "error_code": int(exc.error_code)}
    return {"partition_index": index, "error_code": 0, "timestamp": timestamp,
            "offset": offset, "leader_epoch": hosted.leader_epoch}


async def handle(broker: HandlerContext, request: Request[bodies.ListOffsetsRequest]
                 ) -> bodies.ListOffsetsResponse:
    read_committed = request.body.get("isolation_level", 0) == READ_COMMITTED
    topics: list[bodies.ListOffsetsResponseTopic] = [
        {"name": topic["name"],
         "partitions": [_partition(broker, topic["name"], p, read_committed)
                        for p in topic["partitions"]]}
        for topic in request.body["topics"]]
    return {"throttle_time_ms": 0, "topics": topics}
