"""DescribeProducers (61) v0: the producers a partition's leader remembers (KIP-664), as
``kafka-transactions describe-producers`` and ``find-hanging`` ask, with ListTransactions
and DescribeTransactions.

Kafka's rules: the caller needs Read on the topic (TOPIC_AUTHORIZATION_FAILED per
partition; a tenant sees its own topics only); a partition this broker does not lead is
NOT_LEADER_OR_FOLLOWER and an unknown one UNKNOWN_TOPIC_OR_PARTITION.  Each producer
carries its epoch, the last sequence and timestamp it wrote, and the first offset of its
open transaction (-1: none), the figure that finds a hanging transaction.
``coordinator_epoch`` is always -1: the producer state here does not keep the epoch of
the coordinator that wrote the producer's last marker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from brokerd.protocol import ApiKey
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.tenancy import ApiNames, Names
from brokerd.server.tenancy_rules import RESPONSE_TOPICS, TOPIC_DENIED

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.DESCRIBE_PRODUCERS
MIN_VERSION, MAX_VERSION = 0, 0
TENANCY = ApiNames(
    request=(Names(("topics", "name"), Rt.TOPIC, Op.READ, TOPIC_DENIED),),
    response=(RESPONSE_TOPICS,))
NOT_KEPT = -1


def _partition(broker: HandlerContext, topic: str, index: int
               ) -> bodies.DescribeProducersResponsePartition:
    hosted, error = broker.leader_partition(topic, index)
    if hosted is None:
        return {"partition_index": index, "error_code": int(error), "error_message": None,
                "active_producers": []}
    log = hosted.log
    kept = [entry for entry in map(log.producer_state, sorted(log.producer_last_offsets()))
            if entry is not None]
    return {"partition_index": index, "error_code": 0, "error_message": None,
            "active_producers": [
                {"producer_id": entry.producer_id, "producer_epoch": entry.epoch,
                 "last_sequence": -1 if entry.last_seq is None else entry.last_seq,
                 "last_timestamp": entry.last_timestamp, "coordinator_epoch": NOT_KEPT,
                 "current_txn_start_offset": entry.current_txn_first_offset}
                for entry in kept]}


async def handle(broker: HandlerContext, request: Request[bodies.DescribeProducersRequest]
                 ) -> bodies.DescribeProducersResponse:
    return {"throttle_time_ms": 0, "topics": [
        {"name": topic["name"],
         "partitions": [_partition(broker, topic["name"], index)
                        for index in topic["partition_indexes"]]}
        for topic in request.body["topics"]]}
