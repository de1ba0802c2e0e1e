"""AlterPartitionReassignments (45) v0-1: start, replace or cancel partition reassignments
(KIP-455), as ``kafka-reassign-partitions --execute`` / ``--cancel`` and kafka-python's
``alter_partition_reassignments`` ask.

Kafka's rules: sent to the controller (another broker answers NOT_CONTROLLER for the
whole request); the caller needs Alter on the cluster (else CLUSTER_AUTHORIZATION_FAILED;
tenants never have it: placement is the service's).  Per partition: a replica list starts
a reassignment, or replaces the one in progress (its new replicas outside the new target
are dropped); null cancels one, going back to the original replicas
(NO_REASSIGNMENT_IN_PROGRESS when there is none).  UNKNOWN_TOPIC_OR_PARTITION;
INVALID_REPLICA_ASSIGNMENT for an empty list, a repeated broker or one that is not
registered, and when the current leader would be dropped with no in-sync replica kept to
take over; v1's ``allow_replication_factor_change`` false (KIP-860) refuses a target of
another size with INVALID_REPLICATION_FACTOR.  The answer comes once the controller has
written the new assignment, not when the move completes (ListPartitionReassignments shows
progress).  The decisions are :mod:`brokerd.coordination.election`'s
``altered_reassignment``, ``invalid_target`` and ``state_within``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from brokerd.coordination.election import Altered
from brokerd.coordination.zk_await import CoordinationUnavailableError
from brokerd.protocol import ApiKey, ErrorCode
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.tenancy import ApiNames, Body, Gate, Names
from brokerd.server.tenancy_rules import CLUSTER_DENIED

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.ALTER_PARTITION_REASSIGNMENTS
MIN_VERSION, MAX_VERSION = 0, 1

Key = tuple[str, int]
Target = tuple[int, ...] | None
Outcome = tuple[ErrorCode, str | None]

# INVALID_REPLICAS carries the controller's reason for refusing the replica list.
OUTCOMES: dict[Altered, Outcome] = {
    Altered.STARTED: (ErrorCode.NONE, None),
    Altered.NO_SUCH_PARTITION: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "no such partition"),
    Altered.INVALID_REPLICAS: (ErrorCode.INVALID_REPLICA_ASSIGNMENT, None),
    Altered.NOTHING_TO_CANCEL: (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                                "no reassignment of this partition is in progress"),
    Altered.REPLICATION_FACTOR_CHANGED: (
        ErrorCode.INVALID_REPLICATION_FACTOR,
        "the target changes the replication factor, which the request does not allow"),
    Altered.NO_LEADER_WITHIN: (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "the leader would be dropped and no in-sync replica kept can take over"),
}


def _answer(outcomes: Mapping[Key, Outcome], error: ErrorCode = ErrorCode.NONE,
            allowed: bool = True) -> bodies.AlterPartitionReassignmentsResponse:
    """``allowed``: the request's ``allow_replication_factor_change``, echoed from v1."""
    by_topic: dict[str, list[bodies.AlterPartitionReassignmentsResponsePartition]] = {}
    for (topic, partition), (code, text) in outcomes.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": partition, "error_code": int(code), "error_message": text})
    return {"throttle_time_ms": 0, "allow_replication_factor_change": allowed,
            "error_code": int(error), "error_message": None,
            "responses": [{"name": topic, "partitions": partitions}
                          for topic, partitions in by_topic.items()]}


def _denied(body: Mapping[str, Any], error: ErrorCode) -> Body:
    return dict(_answer({}, error))


TENANCY = ApiNames(
    request=(Names(("topics", "name"), Rt.TOPIC),),
    response=(Names(("responses", "name"), Rt.TOPIC),),
    gates=(Gate(Rt.CLUSTER, Op.ALTER, CLUSTER_DENIED, _denied),))


async def handle(broker: HandlerContext,
                 request: Request[bodies.AlterPartitionReassignmentsRequest]
                 ) -> bodies.AlterPartitionReassignmentsResponse:
    body = request.body
    targets: dict[Key, Target] = {
        (topic["name"], partition["partition_index"]):
            None if partition["replicas"] is None else tuple(partition["replicas"])
        for topic in body["topics"] for partition in topic["partitions"]}
    allowed = request.header.api_version < 1 or body["allow_replication_factor_change"]
    if broker.coordinator is None or not broker.coordinator.is_controller:
        return _answer({}, ErrorCode.NOT_CONTROLLER, allowed)
    try:
        altered = await broker.coordinator.alter_reassignments(targets, not allowed)
    except CoordinationUnavailableError as exc:
        return _answer({key: (ErrorCode.REQUEST_TIMED_OUT, str(exc)) for key in targets},
                       allowed=allowed)
    if altered is None:
        return _answer({}, ErrorCode.NOT_CONTROLLER, allowed)
    outcomes: dict[Key, Outcome] = {}
    for key in targets:
        if key not in altered:
            outcomes[key] = (ErrorCode.REQUEST_TIMED_OUT,
                             "the topic's assignment kept changing; try again")
        else:
            outcome, reason = altered[key]
            code, message = OUTCOMES[outcome]
            outcomes[key] = (code, reason or message)
    return _answer(outcomes, allowed=allowed)
