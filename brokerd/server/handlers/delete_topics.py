"""DeleteTopics (20) v1-6: remove topics from ZooKeeper; every broker then drops the logs.

v6 may name topics by id.  The answer waits (bounded by ``timeout_ms``) until the deletion
reached this broker's metadata, so a following Metadata request no longer lists it.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from brokerd.coordination.zk_await import CoordinationUnavailableError
from brokerd.protocol import ApiKey, ErrorCode
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.handlers.common import ZERO_UUID
from brokerd.server.tenancy import ApiNames, Names
from brokerd.server.tenancy_rules import TOPIC_DENIED

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.DELETE_TOPICS
MIN_VERSION, MAX_VERSION = 1, 6  # v0 removed by Kafka 4.0 (KIP-896)
# Where this API's names live and which ACL operations they need (server.tenancy).
TENANCY = ApiNames(
    request=(Names(("topic_names",), Rt.TOPIC, Op.DELETE, TOPIC_DENIED),
             Names(("topics", "name"), Rt.TOPIC, Op.DELETE, TOPIC_DENIED)),
    response=(Names(("responses", "name"), Rt.TOPIC),),
    topic_ids=((("topics", "topic_id"), Op.DELETE),))


def _wanted(request: Request[bodies.DeleteTopicsRequest]) -> list[tuple[str | None, uuid.UUID]]:
    if request.version >= 6:
        return [(t["name"], t["topic_id"] or ZERO_UUID) for t in request.body["topics"]]
    return [(name, ZERO_UUID) for name in request.body["topic_names"]]


async def _delete(broker: HandlerContext, name: str | None, topic_id: uuid.UUID, timeout_s: float
                  ) -> bodies.DeleteTopicsResponseResponse:
    metadata = broker.cache.topic(name) if name is not None else broker.cache.topic_by_id(
        topic_id)
    entry: bodies.DeleteTopicsResponseResponse = {"name": name, "topic_id": topic_id,
                                                  "error_message": None, "error_code": 0}
    if metadata is None:
        unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if name else ErrorCode.UNKNOWN_TOPIC_ID
        return {**entry, "error_code": int(unknown)}
    entry["name"], entry["topic_id"] = metadata.name, metadata.topic_id
    if not broker.config.delete_topic_enable:
        return {**entry, "error_code": int(ErrorCode.TOPIC_DELETION_DISABLED)}
    assert broker.coordinator is not None
    try:
        await broker.coordinator.delete_topic(metadata.name)
    except CoordinationUnavailableError as exc:
        return {**entry, "error_code": int(ErrorCode.REQUEST_TIMED_OUT), "error_message": str(exc)}
    gone = timeout_s <= 0 or await broker.cache.wait_until(
        lambda: broker.cache.topic(metadata.name) is None, timeout_s)
    error = ErrorCode.NONE if gone else ErrorCode.REQUEST_TIMED_OUT
    return {**entry, "error_code": int(error)}


async def handle(broker: HandlerContext, request: Request[bodies.DeleteTopicsRequest]
                 ) -> bodies.DeleteTopicsResponse:
    timeout_s = request.body["timeout_ms"] / 1000
    return {"throttle_time_ms": 0,
            "responses": [await _delete(broker, name, topic_id, timeout_s)
                          for name, topic_id in _wanted(request)]}
