"""OffsetForLeaderEpoch (23) v2-4: where a leader epoch's writes ended on this leader.

Followers ask before fetching from a new leader to find a divergent tail (KIP-279);
consumers ask after a leader change to detect truncation (KIP-320).  The answer is the
largest epoch at or below the requested one and the offset where it ended (the log end
for the latest epoch); an epoch older than everything known is (-1, -1) with no error, as
in Kafka.  Only the leader answers; the caller's ``current_leader_epoch`` (v2+) is
checked like Fetch's (FENCED / UNKNOWN_LEADER_EPOCH), on a follower too before its
NOT_LEADER_OR_FOLLOWER (``Reconciler.leader_partition``: Kafka's order).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from brokerd.protocol import ApiKey, ErrorCode
from brokerd.replication.rules import epoch_error
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.tenancy import ApiNames, Gate, Names
from brokerd.server.tenancy_rules import CLUSTER_DENIED, TOPIC_DENIED, every_epoch_partition

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.OFFSET_FOR_LEADER_EPOCH
MIN_VERSION, MAX_VERSION = 2, 4  # v0-1 removed by Kafka 4.0 (KIP-896)
# Where this API's names live and which ACL operations they need (server.tenancy).
TENANCY = ApiNames(
    request=(Names(("topics", "topic"), Rt.TOPIC, Op.DESCRIBE, TOPIC_DENIED),),
    response=(Names(("topics", "topic"), Rt.TOPIC),),
    # Followers (replica_id >= 0) truncating their logs: ClusterAction, as for Fetch.
    gates=(Gate(Rt.CLUSTER, Op.ALL, CLUSTER_DENIED, every_epoch_partition,
                only_if=lambda body, version: body.get("replica_id", -2) >= 0),))


def _partition(broker: HandlerContext, topic: str,
               wanted: bodies.OffsetForLeaderEpochRequestPartition
               ) -> bodies.OffsetForLeaderEpochResponsePartition:
    index = wanted["partition"]
    hosted, error = broker.leader_partition(topic, index,
                                            wanted.get("current_leader_epoch", -1))
    if hosted is not None:
        error = epoch_error(wanted.get("current_leader_epoch", -1), hosted.leader_epoch)
    if hosted is None or error:
        return {"error_code": int(error), "partition": index, "leader_epoch": -1,
                "end_offset": -1}
    epoch, end_offset = hosted.log.leader_epoch_cache.end_offset_for(
        wanted["leader_epoch"], hosted.log_end_offset)
    return {"error_code": int(ErrorCode.NONE), "partition": index, "leader_epoch": epoch,
            "end_offset": end_offset}


async def handle(broker: HandlerContext, request: Request[bodies.OffsetForLeaderEpochRequest]
                 ) -> bodies.OffsetForLeaderEpochResponse:
    topics: list[bodies.OffsetForLeaderEpochResponseTopic] = [{"topic": topic["topic"],
               "partitions": [_partition(broker, topic["topic"], p)
                              for p in topic["partitions"]]}
              for topic in request.body["topics"]]
    return {"throttle_time_ms": 0, "topics": topics}
