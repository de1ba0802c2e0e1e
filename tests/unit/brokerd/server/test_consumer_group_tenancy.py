"""KIP-848 group APIs inside a tenant's namespace: group ids and topic names are mapped
like the classic group APIs', and a regular-expression subscription only ever sees the
tenant's own topics, by the names the tenant knows them by."""

from __future__ import annotations

import uuid
from typing import Any

from brokerd.coordination.znodes import TopicMetadata
from brokerd.protocol import ApiKey, ErrorCode
from brokerd.security import TenantNamespace
from brokerd.server.consumer_topics import CachedTopics
from brokerd.server.metadata_cache import MetadataCache
from tests.unit.brokerd.server.test_tenancy import _acl, _guard


def heartbeat(**fields: Any) -> dict[str, Any]:
    return {"group_id": "workers", "member_id": "m", "member_epoch": 0, "instance_id": None,
            "rack_id": None, "rebalance_timeout_ms": 1000,
            "subscribed_topic_names": ["orders"], "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": [], **fields}


def test_heartbeat_maps_the_group_and_subscribed_topics_into_the_namespace() -> None:
    guard = _guard(ApiKey.CONSUMER_GROUP_HEARTBEAT, _acl("Read", "Group", "acme.workers",
                                                          "literal"))
    body = heartbeat()
    assert guard.admit(body, 1) is None
    assert body["group_id"] == "acme.workers"
    assert body["subscribed_topic_names"] == ["acme.orders"]


def test_heartbeat_needs_read_on_the_group() -> None:
    denied = _guard(ApiKey.CONSUMER_GROUP_HEARTBEAT).admit(heartbeat(), 1)
    assert denied is not None and denied["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_describe_maps_groups_and_assigned_topics_back() -> None:
    guard = _guard(ApiKey.CONSUMER_GROUP_DESCRIBE,
                   _acl("Describe", "Group", "acme.workers", "literal"))
    body: dict[str, Any] = {"group_ids": ["workers", "theirs"],
                            "include_authorized_operations": False}
    guard.admit(body, 1)
    assert body["group_ids"][0] == "acme.workers" and body["group_ids"][1].startswith("\0")
    row = {"topic_id": uuid.uuid4(), "topic_name": "acme.orders", "partitions": [0]}
    response = {"groups": [
        {"group_id": "acme.workers", "error_code": 0, "members": [
            {"assignment": {"topic_partitions": [row]},
             "target_assignment": {"topic_partitions": [dict(row)]}}]},
        {"group_id": body["group_ids"][1], "error_code": 0, "members": []}]}
    guard.restore(response)
    (member,) = response["groups"][0]["members"]
    assert response["groups"][0]["group_id"] == "workers"
    assert member["assignment"]["topic_partitions"][0]["topic_name"] == "orders"
    assert member["target_assignment"]["topic_partitions"][0]["topic_name"] == "orders"
    assert response["groups"][1]["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED


def _cache(*names: str) -> MetadataCache:
    cache = MetadataCache(broker_id=1)
    for name in names:
        cache.put_topic(name, TopicMetadata(name, uuid.uuid4(), {0: (1,), 1: (1,)}))
    return cache


def test_a_tenants_regex_matches_its_own_topics_by_their_local_names() -> None:
    cache = _cache("acme.orders", "acme.orders-eu", "globex.orders", "acmeXorders",
                   "__consumer_offsets")
    topics = CachedTopics(cache, TenantNamespace("acme"))
    assert topics.matching("orders.*") == {"acme.orders", "acme.orders-eu"}
    assert topics.matching(".*") == {"acme.orders", "acme.orders-eu"}
    assert topics.matching("acme.orders") == frozenset()  # a tenant's names have no prefix
    operator = CachedTopics(cache, TenantNamespace(None))
    assert operator.matching(".*orders") == {"acme.orders", "globex.orders", "acmeXorders"}
    info = topics.by_name("acme.orders")
    assert info is not None and info.partitions == 2
    assert topics.name_of(info.topic_id) == "acme.orders"
