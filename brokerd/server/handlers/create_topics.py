"""CreateTopics (19) v2-7: validate, place, write ZooKeeper, wait for leaders.

``num_partitions`` / ``replication_factor`` of -1 (v4+) mean the broker defaults; explicit
``assignments`` replace both.  ``validate_only`` runs every check and writes nothing.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from brokerd.protocol import ApiKey
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server import topic_admin
from brokerd.server.handlers.common import ZERO_UUID
from brokerd.server.tenancy import ApiNames, Names
from brokerd.server.tenancy_rules import RESPONSE_TOPICS, TOPIC_DENIED, create_topics_policy

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.CREATE_TOPICS
MIN_VERSION, MAX_VERSION = 2, 7  # v0-1 removed by Kafka 4.0 (KIP-896)
# Where this API's names live and which ACL operations they need (server.tenancy).
TENANCY = ApiNames(
    request=(Names(("topics", "name"), Rt.TOPIC, Op.CREATE, TOPIC_DENIED),),
    response=(RESPONSE_TOPICS,),
    policy=create_topics_policy)


async def _create(broker: HandlerContext, request: Request[bodies.CreateTopicsRequest],
                  topic: bodies.CreateTopicsRequestTopic) -> bodies.CreateTopicsResponseTopic:
    name = topic["name"]
    configs = {c["name"]: c["value"] for c in topic["configs"] if c["value"] is not None}
    assignments = {a["partition_index"]: a["broker_ids"] for a in topic["assignments"]}
    result, replicas = await topic_admin.create_topic(
        broker, name, topic["num_partitions"], topic["replication_factor"], assignments,
        configs, request.body["validate_only"], request.body["timeout_ms"] / 1000)
    metadata = broker.cache.topic(name)
    entry: bodies.CreateTopicsResponseTopic = {
        "name": name, "error_code": int(result.error_code),
        "error_message": result.error_message,
        "topic_id": metadata.topic_id if metadata is not None and result.ok else ZERO_UUID,
        "num_partitions": len(replicas) if replicas else -1,
        "replication_factor": len(next(iter(replicas.values()))) if replicas else -1,
        "configs": None,
    }
    if replicas and result.ok:
        effective = broker.log_config_for(configs).to_props()
        entry["configs"] = [{"name": key, "value": value, "read_only": False,
                             "config_source": 1 if key in configs else 5,
                             "is_sensitive": False}
                            for key, value in sorted(effective.items())]
    return entry


async def handle(broker: HandlerContext, request: Request[bodies.CreateTopicsRequest]
                 ) -> bodies.CreateTopicsResponse:
    """Every topic is written at once and their leaders are awaited together, within the
    request's one timeout (Kafka's order).  Awaiting each topic's leaders before writing
    the next made a request of 30 topics take the sum of 30 elections, longer than a
    client's 60 s request timeout while a broker was busy."""
    created = await asyncio.gather(*(_create(broker, request, topic)
                                     for topic in request.body["topics"]))
    return {"throttle_time_ms": 0, "topics": list(created)}
