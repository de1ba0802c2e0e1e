"""Metadata (3) v0-12: brokers, controller, topics with ids, leaders, epochs, replicas, ISR.

Brokers are described by their endpoint for the listener the request arrived on, so a
client connected to the SASL listener is never sent to a PLAINTEXT port.  Unknown topics
are auto-created when both the broker (``auto.create.topics.enable``) and the client
(``allow_auto_topic_creation``, v4+) allow it; the answer then waits briefly for the new
leaders so the client's next produce goes straight through.  v0 (still served by Kafka
4.0) has no null topic list: there an empty list asks for every topic.  v8+ answer the
operations the caller may do on each topic (and, v8-10, on the cluster) when asked
(KIP-430, ``server.authorization``).

A topic is listed only once the controller has written the state of every one of its
partitions, and partitions added later only once all of theirs are written
(``MetadataCache.announced_partitions``): Kafka's brokers learn a topic's partitions from
the controller together with their leaders, so clients never see a topic being created,
nor one with fewer partitions than it has.  librdkafka treats
a listed topic whose every partition lacks a leader as having no such partition (its
``get_watermark_offsets`` fails at once with ``_UNKNOWN_PARTITION``), where an unknown
topic makes it ask again.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, cast

from brokerd.coordination.znodes import PartitionState, TopicMetadata
from brokerd.protocol import ApiKey, ErrorCode
from brokerd.protocol.compiler import ReusedArray, ReusedStruct
from brokerd.security import CLUSTER_NAME
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.security.authorized_operations import NOT_PROVIDED
from brokerd.server import topic_admin
from brokerd.server.authorization import authorized_operations
from brokerd.server.handlers.common import ZERO_UUID, broker_entries
from brokerd.server.tenancy import ApiNames, Names
from brokerd.server.tenancy_rules import TOPIC_DENIED, metadata_policy

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.METADATA
MIN_VERSION, MAX_VERSION = 0, 12
# Where this API's names live and which ACL operations they need (server.tenancy).
TENANCY = ApiNames(
    request=(Names(("topics", "name"), Rt.TOPIC, Op.DESCRIBE, TOPIC_DENIED),),
    response=(Names(("topics", "name"), Rt.TOPIC, Op.DESCRIBE),),
    topic_ids=((("topics", "topic_id"), Op.DESCRIBE),),
    policy=metadata_policy)
AUTO_CREATE_WAIT_S = 5.0


def topic_entry(broker: HandlerContext, metadata: TopicMetadata) -> bodies.MetadataResponseTopic:
    partitions = broker.cache.derived(metadata, partition_entries)
    return {"error_code": int(ErrorCode.NONE), "name": metadata.name,
            "topic_id": metadata.topic_id, "is_internal": metadata.name.startswith("__"),
            "partitions": partitions}


class PartitionEntries(ReusedArray):
    """A topic's partitions in a Metadata answer, with what each element was built from,
    by partition: the next state of the topic hands unchanged elements on, their kept
    encodings with them."""

    def __init__(self, live: frozenset[int]) -> None:
        super().__init__()
        self.live = live
        self.built_from: dict[int, tuple[PartitionState, tuple[int, ...], ReusedStruct]] = {}


def partition_entries(metadata: TopicMetadata, announced: frozenset[int], live: frozenset[int],
                      previous: PartitionEntries | None) -> PartitionEntries:
    """The answer's partitions of a topic: built once per state of the topic and of the
    live brokers (see ``MetadataCache.derived``), each partition's element anew only when
    its state or replicas changed, and encoded once per version and element.

    Why per element: a failover writes a large topic's states a few hundred at a time,
    and clients ask again after each leadership error; rebuilding and encoding a
    10,000-partition topic whole at every batch was 7 % of a survivor's loop in the
    30,000-partition failover (bench/README, session 52)."""
    reusable = previous.built_from if previous is not None and previous.live == live else {}
    partitions = PartitionEntries(live)
    for index, replicas in sorted(metadata.replicas.items()):
        state = metadata.states.get(index)
        if state is None or index not in announced:
            continue  # being created or added: not announced yet
        kept = reusable.get(index)
        if kept is not None and kept[1] == replicas and (kept[0] is state or kept[0] == state):
            entry = kept[2]
        else:
            entry = _partition_entry(index, replicas, state, live)
        partitions.append(entry)
        partitions.built_from[index] = (state, replicas, entry)
    return partitions


def _partition_entry(index: int, replicas: tuple[int, ...], state: PartitionState,
                     live: frozenset[int]) -> ReusedStruct:
    if state.leader not in live:
        error, leader, epoch, isr = ErrorCode.LEADER_NOT_AVAILABLE, -1, -1, []
    else:
        error, leader, epoch, isr = ErrorCode.NONE, state.leader, state.leader_epoch, list(
            state.isr)
    return ReusedStruct({
        "error_code": int(error), "partition_index": index, "leader_id": leader,
        "leader_epoch": epoch, "replica_nodes": list(replicas), "isr_nodes": isr,
        "offline_replicas": [b for b in replicas if b not in live],
    })


def _announced(broker: HandlerContext, metadata: TopicMetadata | None
               ) -> TopicMetadata | None:
    """``metadata`` once its partitions are announced (see the module doc), else None."""
    if metadata is None or not broker.cache.announced_partitions(metadata):
        return None
    return metadata


def error_entry(name: str | None, error: ErrorCode, topic_id: uuid.UUID = ZERO_UUID
                ) -> bodies.MetadataResponseTopic:
    return {"error_code": int(error), "name": name, "topic_id": topic_id, "is_internal": False,
            "partitions": []}


async def _resolve(broker: HandlerContext, request: Request[bodies.MetadataRequest],
                   wanted: bodies.MetadataRequestTopic) -> bodies.MetadataResponseTopic:
    name: str | None = wanted.get("name")
    topic_id: uuid.UUID = wanted.get("topic_id") or ZERO_UUID
    if name is None:
        metadata = _announced(broker, broker.cache.topic_by_id(topic_id))
        if metadata is None:
            return error_entry(None, ErrorCode.UNKNOWN_TOPIC_ID, topic_id)
        return topic_entry(broker, metadata)
    metadata = _announced(broker, broker.cache.topic(name))
    if metadata is not None:
        return topic_entry(broker, metadata)
    allowed = request.version < 4 or request.body.get("allow_auto_topic_creation", True)
    if not (broker.config.auto_create_topics_enable and allowed):
        return error_entry(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    # A tenant's auto-created topic gets its plan's factor, which tenancy_rules.metadata_policy
    # adds to the request under a key Metadata's schema (so its TypedDict) lacks.
    factor = cast(int, wanted.get("replication_factor", -1))
    result, _ = await topic_admin.create_topic(broker, name, -1, factor,
                                               timeout_s=AUTO_CREATE_WAIT_S)
    if result.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION:
        return error_entry(name, ErrorCode.INVALID_TOPIC_EXCEPTION)
    if result.error_code == ErrorCode.TOPIC_ALREADY_EXISTS:  # another client won the race
        await broker.cache.wait_until(lambda: broker.cache.has_leaders(name),
                                      AUTO_CREATE_WAIT_S)
    metadata = _announced(broker, broker.cache.topic(name))
    if metadata is None:
        return error_entry(name, ErrorCode.LEADER_NOT_AVAILABLE)
    return topic_entry(broker, metadata)


async def handle(broker: HandlerContext, request: Request[bodies.MetadataRequest]
                 ) -> bodies.MetadataResponse:
    requested = request.body.get("topics")
    if requested is None or (request.version == 0 and not requested):
        topics = [topic_entry(broker, m) for _, m in sorted(broker.cache.topics.items())
                  if _announced(broker, m)]
    else:
        topics = [await _resolve(broker, request, wanted) for wanted in requested]
    if request.body.get("include_topic_authorized_operations"):
        for topic in topics:
            if topic["error_code"] == ErrorCode.NONE and topic["name"] is not None:
                topic["topic_authorized_operations"] = authorized_operations(
                    broker, request, Rt.TOPIC, topic["name"])
    cluster_operations = (authorized_operations(broker, request, Rt.CLUSTER, CLUSTER_NAME)
                          if request.body.get("include_cluster_authorized_operations")
                          else NOT_PROVIDED)
    return {
        "throttle_time_ms": 0,
        "cluster_authorized_operations": cluster_operations,
        "brokers": broker_entries(broker, request.connection.listener_name),
        "cluster_id": broker.cluster_id,
        "controller_id": broker.cache.effective_controller(),
        "topics": topics,
    }
