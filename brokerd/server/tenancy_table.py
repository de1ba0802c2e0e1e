"""Where each API's topic names, group ids and transactional ids live, and which ACL
operation each needs — the table :mod:`brokerd.server.tenancy` applies around dispatch.

Operations follow Kafka's authorizer (``KafkaApis``): Produce Write, Fetch/OffsetCommit
Read, Metadata/ListOffsets/OffsetFetch Describe, CreateTopics Create, DeleteTopics and
DeleteRecords Delete, CreatePartitions Alter, configs DescribeConfigs/AlterConfigs, group
membership Read on the group, DeleteGroups Delete, InitProducerId Write on the
transactional id or IdempotentWrite on the cluster.  Member metadata and assignments are
opaque bytes to the broker and stay untouched (a tenant's consumers only ever see their
own topic names in them anyway, since they wrote them).

An API missing from :data:`TENANCY_TABLE` is refused to every principal that is not a
super user (fail closed): adding a handler means adding its row here.
"""

from __future__ import annotations

from typing import Any

from brokerd.protocol import ApiKey, ErrorCode
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.tenancy import ApiNames, Body, Gate, Guard, Names

TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TXN_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
# Config resource types (DescribeConfigs / IncrementalAlterConfigs).
TOPIC_RESOURCE = 2
BROKER_RESOURCES = (4, 8)  # broker, broker logger
GROUP_KEY, TRANSACTION_KEY = 0, 1  # FindCoordinator key types


def _topic_config(resource: Body) -> bool:
    return bool(resource.get("resource_type") == TOPIC_RESOURCE)


def _broker_config(resource: Body) -> bool:
    return resource.get("resource_type") in BROKER_RESOURCES


def _error_only(body: Body, error: ErrorCode) -> Body:
    return {"error_code": int(error)}


def _no_producer_id(body: Body, error: ErrorCode) -> Body:
    return {"error_code": int(error), "producer_id": -1, "producer_epoch": -1}


def _no_coordinator(body: Body, error: ErrorCode) -> Body:
    return {"error_code": int(error), "node_id": -1, "host": "", "port": -1}


def _every_produce_partition(body: Body, error: ErrorCode) -> Body:
    return {"responses": [
        {"name": topic["name"], "partition_responses": [
            {"index": p["index"], "error_code": int(error)} for p in topic["partition_data"]]}
        for topic in body["topic_data"]]}


def _every_epoch_partition(body: Body, error: ErrorCode) -> Body:
    return {"topics": [
        {"topic": topic["topic"], "partitions": [
            {"partition": p["partition"], "error_code": int(error)} for p in topic["partitions"]]}
        for topic in body["topics"]]}


def _commit_answer(topic: Body, error: ErrorCode = ErrorCode.NONE) -> Body:
    return {"name": topic["name"], "partitions": [
        {"partition_index": p["partition_index"], "error_code": int(error)}
        for p in topic["partitions"]]}


def _every_commit_partition(body: Body, error: ErrorCode) -> Body:
    return {"topics": [_commit_answer(topic, error) for topic in body["topics"]]}


# ---- policies: a tenant's partition allowance (``max_partitions`` of its plan) ------------

def _owned_partitions(guard: Guard) -> int:
    return sum(count for name, count in guard.resources.partition_counts().items()
               if guard.namespace.owns(name))


def _charge(guard: Guard, requests: list[tuple[Any, Any, int]]) -> None:
    """Grant (holder, slot, partitions) requests in order while the allowance lasts; deny
    the rest with POLICY_VIOLATION.  Operators have no allowance to respect."""
    tenant = guard.namespace.tenant
    if tenant is None:
        return
    available = guard.resources.max_partitions(tenant) - _owned_partitions(guard)
    for holder, slot, partitions in requests:
        if partitions > available:
            guard.deny(holder, slot, ErrorCode.POLICY_VIOLATION)
        else:
            available -= partitions


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and not value.startswith("\0")


def _create_topics_policy(guard: Guard, body: Body, version: int) -> None:
    requests = []
    for topic in body["topics"]:
        if _is_name(topic["name"]):
            count = topic["num_partitions"]
            if count <= 0:
                count = len(topic["assignments"]) or guard.resources.default_partitions
            requests.append((topic, "name", count))
    _charge(guard, requests)


def _create_partitions_policy(guard: Guard, body: Body, version: int) -> None:
    counts = guard.resources.partition_counts()
    _charge(guard, [(topic, "name", max(0, topic["count"] - counts.get(topic["name"], 0)))
                    for topic in body["topics"] if _is_name(topic["name"])])


def _metadata_policy(guard: Guard, body: Body, version: int) -> None:
    """Auto-creation by Metadata needs Create on the topic and counts against the plan."""
    if guard.namespace.tenant is None or not body.get("topics"):
        return
    if version >= 4 and not body.get("allow_auto_topic_creation", True):
        return
    counts = guard.resources.partition_counts()
    missing = [topic for topic in body["topics"]
               if _is_name(topic.get("name")) and topic["name"] not in counts]
    creatable = []
    for topic in missing:
        if guard.allowed(Op.CREATE, Rt.TOPIC, topic["name"]):
            creatable.append((topic, "name", guard.resources.default_partitions))
        else:
            guard.deny(topic, "name", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    _charge(guard, creatable)


# ---- the table --------------------------------------------------------------------------

_GROUP_ID = Names(("group_id",), Rt.GROUP)
_RESPONSE_TOPICS = Names(("topics", "name"), Rt.TOPIC)


def _group_gate(operation: Op, denied: Any = _error_only) -> Gate:
    return Gate(Rt.GROUP, operation, GROUP_DENIED, denied, ("group_id",))


TENANCY_TABLE: dict[int, ApiNames] = {
    ApiKey.API_VERSIONS: ApiNames(),
    ApiKey.SASL_HANDSHAKE: ApiNames(),
    ApiKey.SASL_AUTHENTICATE: ApiNames(),
    ApiKey.DESCRIBE_CLUSTER: ApiNames(),
    ApiKey.METADATA: ApiNames(
        request=(Names(("topics", "name"), Rt.TOPIC, Op.DESCRIBE, TOPIC_DENIED),),
        response=(Names(("topics", "name"), Rt.TOPIC, Op.DESCRIBE),),
        topic_ids=((("topics", "topic_id"), Op.DESCRIBE),),
        policy=_metadata_policy),
    ApiKey.PRODUCE: ApiNames(
        request=(Names(("topic_data", "name"), Rt.TOPIC, Op.WRITE, TOPIC_DENIED),
                 Names(("transactional_id",), Rt.TRANSACTIONAL_ID)),
        response=(Names(("responses", "name"), Rt.TOPIC),),
        gates=(Gate(Rt.TRANSACTIONAL_ID, Op.WRITE, TXN_DENIED, _every_produce_partition,
                    ("transactional_id",)),)),
    ApiKey.FETCH: ApiNames(
        request=(Names(("topics", "topic"), Rt.TOPIC, Op.READ, TOPIC_DENIED),
                 Names(("forgotten_topics_data", "topic"), Rt.TOPIC)),
        response=(Names(("responses", "topic"), Rt.TOPIC),),
        # Only brokers fetch as replicas (replica_id >= 0): that is ClusterAction.
        gates=(Gate(Rt.CLUSTER, Op.ALL, CLUSTER_DENIED, _error_only,
                    only_if=lambda body, version: body["replica_id"] >= 0),)),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: ApiNames(
        request=(Names(("topics", "topic"), Rt.TOPIC, Op.DESCRIBE, TOPIC_DENIED),),
        response=(Names(("topics", "topic"), Rt.TOPIC),),
        # Followers (replica_id >= 0) truncating their logs: ClusterAction, as for Fetch.
        gates=(Gate(Rt.CLUSTER, Op.ALL, CLUSTER_DENIED, _every_epoch_partition,
                    only_if=lambda body, version: body.get("replica_id", -2) >= 0),)),
    ApiKey.LIST_OFFSETS: ApiNames(
        request=(Names(("topics", "name"), Rt.TOPIC, Op.DESCRIBE, TOPIC_DENIED),),
        response=(_RESPONSE_TOPICS,)),
    ApiKey.CREATE_TOPICS: ApiNames(
        request=(Names(("topics", "name"), Rt.TOPIC, Op.CREATE, TOPIC_DENIED),),
        response=(_RESPONSE_TOPICS,),
        policy=_create_topics_policy),
    ApiKey.DELETE_TOPICS: ApiNames(
        request=(Names(("topic_names",), Rt.TOPIC, Op.DELETE, TOPIC_DENIED),
                 Names(("topics", "name"), Rt.TOPIC, Op.DELETE, TOPIC_DENIED)),
        response=(Names(("responses", "name"), Rt.TOPIC),),
        topic_ids=((("topics", "topic_id"), Op.DELETE),)),
    ApiKey.CREATE_PARTITIONS: ApiNames(
        request=(Names(("topics", "name"), Rt.TOPIC, Op.ALTER, TOPIC_DENIED),),
        response=(Names(("results", "name"), Rt.TOPIC),),
        policy=_create_partitions_policy),
    ApiKey.DELETE_RECORDS: ApiNames(
        request=(Names(("topics", "name"), Rt.TOPIC, Op.DELETE, TOPIC_DENIED),),
        response=(_RESPONSE_TOPICS,)),
    ApiKey.DESCRIBE_CONFIGS: ApiNames(
        request=(Names(("resources", "resource_name"), Rt.TOPIC, Op.DESCRIBE_CONFIGS,
                       TOPIC_DENIED, _topic_config),
                 Names(("resources", "resource_name"), Rt.CLUSTER, Op.DESCRIBE_CONFIGS,
                       CLUSTER_DENIED, _broker_config)),
        response=(Names(("results", "resource_name"), Rt.TOPIC, only_if=_topic_config),)),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: ApiNames(
        request=(Names(("resources", "resource_name"), Rt.TOPIC, Op.ALTER_CONFIGS,
                       TOPIC_DENIED, _topic_config),
                 Names(("resources", "resource_name"), Rt.CLUSTER, Op.ALTER_CONFIGS,
                       CLUSTER_DENIED, _broker_config)),
        response=(Names(("responses", "resource_name"), Rt.TOPIC, only_if=_topic_config),)),
    ApiKey.INIT_PRODUCER_ID: ApiNames(
        request=(Names(("transactional_id",), Rt.TRANSACTIONAL_ID),),
        gates=(Gate(Rt.TRANSACTIONAL_ID, Op.WRITE, TXN_DENIED, _no_producer_id,
                    ("transactional_id",)),
               Gate(Rt.CLUSTER, Op.IDEMPOTENT_WRITE, CLUSTER_DENIED, _no_producer_id,
                    only_if=lambda body, version: body["transactional_id"] is None))),
    # ---- groups ----
    ApiKey.FIND_COORDINATOR: ApiNames(
        request=(Names(("key",), Rt.GROUP),
                 Names(("coordinator_keys",), Rt.GROUP, Op.DESCRIBE, GROUP_DENIED,
                       lambda body: body.get("key_type", GROUP_KEY) == GROUP_KEY),
                 Names(("coordinator_keys",), Rt.TRANSACTIONAL_ID, Op.DESCRIBE, TXN_DENIED,
                       lambda body: body.get("key_type") == TRANSACTION_KEY)),
        response=(Names(("coordinators", "key"), Rt.GROUP),),
        gates=(Gate(Rt.GROUP, Op.DESCRIBE, GROUP_DENIED, _no_coordinator, ("key",),
                    lambda body, version: version < 4 and body.get("key_type", 0) == GROUP_KEY),
               Gate(Rt.TRANSACTIONAL_ID, Op.DESCRIBE, TXN_DENIED, _no_coordinator, ("key",),
                    lambda body, version: version < 4 and body.get("key_type") == 1))),
    ApiKey.JOIN_GROUP: ApiNames(request=(_GROUP_ID,), gates=(_group_gate(Op.READ),)),
    ApiKey.SYNC_GROUP: ApiNames(request=(_GROUP_ID,), gates=(_group_gate(Op.READ),)),
    ApiKey.HEARTBEAT: ApiNames(request=(_GROUP_ID,), gates=(_group_gate(Op.READ),)),
    ApiKey.LEAVE_GROUP: ApiNames(request=(_GROUP_ID,), gates=(_group_gate(Op.READ),)),
    ApiKey.OFFSET_COMMIT: ApiNames(
        request=(_GROUP_ID, Names(("topics", "name"), Rt.TOPIC, Op.READ, TOPIC_DENIED)),
        response=(_RESPONSE_TOPICS,),
        gates=(_group_gate(Op.READ, _every_commit_partition),),
        withheld=(("topics",), _commit_answer)),
    ApiKey.OFFSET_FETCH: ApiNames(
        request=(_GROUP_ID,
                 Names(("topics", "name"), Rt.TOPIC, Op.DESCRIBE, TOPIC_DENIED),
                 Names(("groups", "group_id"), Rt.GROUP, Op.DESCRIBE, GROUP_DENIED),
                 Names(("groups", "topics", "name"), Rt.TOPIC, Op.DESCRIBE, TOPIC_DENIED)),
        response=(Names(("topics", "name"), Rt.TOPIC, Op.DESCRIBE),
                  Names(("groups", "group_id"), Rt.GROUP),
                  Names(("groups", "topics", "name"), Rt.TOPIC, Op.DESCRIBE)),
        gates=(Gate(Rt.GROUP, Op.DESCRIBE, GROUP_DENIED, _error_only, ("group_id",),
                    lambda body, version: version < 8),)),
    ApiKey.OFFSET_DELETE: ApiNames(
        request=(_GROUP_ID, Names(("topics", "name"), Rt.TOPIC, Op.READ, TOPIC_DENIED)),
        response=(_RESPONSE_TOPICS,),
        gates=(_group_gate(Op.DELETE),)),
    ApiKey.LIST_GROUPS: ApiNames(
        response=(Names(("groups", "group_id"), Rt.GROUP, Op.DESCRIBE),)),
    ApiKey.DESCRIBE_GROUPS: ApiNames(
        request=(Names(("groups",), Rt.GROUP, Op.DESCRIBE, GROUP_DENIED),),
        response=(Names(("groups", "group_id"), Rt.GROUP),)),
    ApiKey.DELETE_GROUPS: ApiNames(
        request=(Names(("groups_names",), Rt.GROUP, Op.DELETE, GROUP_DENIED),),
        response=(Names(("results", "group_id"), Rt.GROUP),)),
}
