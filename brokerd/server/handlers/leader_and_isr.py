"""LeaderAndIsr (4) v5: the controller pushes the partition states it just wrote to
ZooKeeper (:mod:`brokerd.coordination.state_push`), and this broker applies each one that
is newer, by znode version (Kafka's partition epoch), than what it knows
(:mod:`brokerd.coordination.state_feed`): the replica roles and Metadata answers change at
once, without the one ZooKeeper read per partition its watches then still do.

A request from an older controller epoch than one seen is refused whole with
STALE_CONTROLLER_EPOCH; a partition of a topic not known by that id (not read yet, or
deleted and re-created) is answered UNKNOWN_TOPIC_ID and left to the watches.  The
request's replica lists are not applied: assignments come from ZooKeeper only.

Brokers only (Kafka's ClusterAction): a tenant is refused with
CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

from brokerd.coordination.state_feed import PushedTopic, StaleControllerError
from brokerd.coordination.znodes import PartitionState
from brokerd.protocol import ApiKey, ErrorCode
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.tenancy import ApiNames, Gate
from brokerd.server.tenancy_rules import CLUSTER_DENIED

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

log = logging.getLogger(__name__)

API_KEY = ApiKey.LEADER_AND_ISR
MIN_VERSION, MAX_VERSION = 5, 5


def _every_partition(body: dict[str, Any], error: ErrorCode) -> dict[str, Any]:
    return dict(_answer(cast("bodies.LeaderAndIsrRequest", body), error))


TENANCY = ApiNames(gates=(Gate(Rt.CLUSTER, Op.ALL, CLUSTER_DENIED, _every_partition),))


def _pushed(topic: bodies.LeaderAndIsrRequestTopicState) -> PushedTopic:
    return PushedTopic(topic["topic_name"], topic["topic_id"], {
        state["partition_index"]: PartitionState(
            state["leader"], state["leader_epoch"], tuple(state["isr"]),
            state["controller_epoch"], state["partition_epoch"])
        for state in topic["partition_states"]})


def _answer(body: bodies.LeaderAndIsrRequest, error: ErrorCode,
            applied: dict[str, dict[int, PartitionState] | None] | None = None
            ) -> bodies.LeaderAndIsrResponse:
    """``error`` for the whole request, or (NONE) each partition's outcome in ``applied``."""
    def code(topic: bodies.LeaderAndIsrRequestTopicState) -> int:
        if applied is not None and applied.get(topic["topic_name"]) is None:
            return int(ErrorCode.UNKNOWN_TOPIC_ID)
        return int(error)
    return {"error_code": int(error), "topics": [
        {"topic_id": topic["topic_id"], "partition_errors": [
            {"partition_index": state["partition_index"], "error_code": code(topic)}
            for state in topic["partition_states"]]}
        for topic in body["topic_states"]]}


async def handle(broker: HandlerContext, request: Request[bodies.LeaderAndIsrRequest]
                 ) -> bodies.LeaderAndIsrResponse:
    body = request.body
    if broker.coordinator is None:
        return _answer(body, ErrorCode.BROKER_NOT_AVAILABLE)
    try:
        applied = broker.coordinator.states.pushed(
            body["controller_epoch"], [_pushed(topic) for topic in body["topic_states"]])
    except StaleControllerError:
        return _answer(body, ErrorCode.STALE_CONTROLLER_EPOCH)
    log.info("applied %d of %d partition states pushed by controller %d (epoch %d)",
             sum(len(states) for states in applied.values() if states),
             sum(len(topic["partition_states"]) for topic in body["topic_states"]),
             body["controller_id"], body["controller_epoch"])
    return _answer(body, ErrorCode.NONE, applied)
