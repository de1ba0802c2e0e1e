"""ListPartitionReassignments (46) v0: the reassignments in progress (KIP-455), as
``kafka-reassign-partitions --list``, kafka-python's ``list_partition_reassignments`` and
rebalancing tools (which check for one before starting their own) ask.

Kafka's rules: sent to the controller (another broker answers NOT_CONTROLLER); the caller
needs Describe on the cluster (else CLUSTER_AUTHORIZATION_FAILED; tenants never have it);
null topics lists every partition being reassigned, and named partitions that are not
(or do not exist) are left out.  Each carries Kafka's view of a reassignment in flight:
``replicas`` is the union of the old and the target replicas, ``adding_replicas`` the new
ones still catching up, ``removing_replicas`` the old ones to drop once they have.  The
answer comes from this broker's copy of the topics' assignments (ZooKeeper's
``/brokers/topics/<t>``, as the controller wrote them); reassignments are started by
AlterPartitionReassignments, the control plane or ``/admin/reassign_partitions``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey, ErrorCode
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.tenancy import ApiNames, Body, Gate, Names
from brokerd.server.tenancy_rules import CLUSTER_DENIED

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.LIST_PARTITION_REASSIGNMENTS
MIN_VERSION, MAX_VERSION = 0, 0


def _refused(error: ErrorCode) -> bodies.ListPartitionReassignmentsResponse:
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": None,
            "topics": []}


def _denied(body: Mapping[str, Any], error: ErrorCode) -> Body:
    return dict(_refused(error))


TENANCY = ApiNames(
    request=(Names(("topics", "name"), Rt.TOPIC),),
    response=(Names(("topics", "name"), Rt.TOPIC),),
    gates=(Gate(Rt.CLUSTER, Op.DESCRIBE, CLUSTER_DENIED, _denied),))


async def handle(broker: HandlerContext, request: Request[bodies.ListPartitionReassignmentsRequest]
                 ) -> bodies.ListPartitionReassignmentsResponse:
    if broker.coordinator is None or not broker.coordinator.is_controller:
        return _refused(ErrorCode.NOT_CONTROLLER)
    named = request.body["topics"]
    wanted = None if named is None else {
        topic["name"]: set(topic["partition_indexes"]) for topic in named}
    topics: list[bodies.ListPartitionReassignmentsResponseTopic] = []
    for name, metadata in sorted(broker.cache.topics.items()):
        moving = sorted(set(metadata.adding_replicas) | set(metadata.removing_replicas))
        if wanted is not None:
            moving = [p for p in moving if p in wanted.get(name, ())]
        if moving:
            topics.append({"name": name, "partitions": [
                {"partition_index": p, "replicas": list(metadata.replicas.get(p, ())),
                 "adding_replicas": list(metadata.adding_replicas.get(p, ())),
                 "removing_replicas": list(metadata.removing_replicas.get(p, ()))}
                for p in moving]})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": topics}
