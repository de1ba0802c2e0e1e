"""Every advertised version of every group API, over the wire with our own codec.

The client libraries each use one version of each API; these round trips cover the rest of
what ApiVersions advertises: for each JoinGroup version a single member joins (answering
MEMBER_ID_REQUIRED from v4 on), syncs, heartbeats, commits and fetches an offset,
is described, leaves; the group is then listed and deleted at the matching versions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from brokerd.protocol import ApiKey, ErrorCode
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient
from tests.integration.brokerd.test_groups import create_topic

pytestmark = pytest.mark.integration

TOPIC = "wire-topic"


def join(client: WireClient, version: int, group: str) -> dict[str, Any]:
    body = {"group_id": group, "session_timeout_ms": 6000, "rebalance_timeout_ms": 2000,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"subscription"}], "reason": None}
    joined = client.request(ApiKey.JOIN_GROUP, version, body)
    if version >= 4:  # KIP-394: the first join of an unknown member only hands out its id
        assert joined["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
        joined = client.request(ApiKey.JOIN_GROUP, version,
                                {**body, "member_id": joined["member_id"]})
    assert joined["error_code"] == 0, joined
    return joined


def offsets_of(client: WireClient, version: int, group: str) -> dict[str, Any]:
    """OffsetFetch of partition 0 at ``version``; v8 asks per group."""
    if version >= 8:
        body = {"groups": [{"group_id": group, "topics": [
            {"name": TOPIC, "partition_indexes": [0]}]}], "require_stable": False}
        (answer,) = client.request(ApiKey.OFFSET_FETCH, version, body)["groups"]
    else:
        body = {"group_id": group, "topics": [{"name": TOPIC, "partition_indexes": [0]}],
                "require_stable": False}
        answer = client.request(ApiKey.OFFSET_FETCH, version, body)
    assert answer.get("error_code", 0) == 0, answer
    (topic,) = answer["topics"]
    (partition,) = topic["partitions"]
    return dict(partition)


def test_group_lifecycle_at_every_join_group_version(
        start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker(group_initial_rebalance_delay_ms="0", offsets_topic_num_partitions="3")
    create_topic(broker.bootstrap, TOPIC, 1)
    client = WireClient(broker.port)
    try:
        for version in range(10):  # one broker for all: a failure names its version below
            lifecycle(client, broker.port, version)
    finally:
        client.close()


def lifecycle(client: WireClient, port: int, version: int) -> None:
    """One group's whole life at JoinGroup ``version`` and the matching other versions."""
    group = f"wire-{version}"
    found = client.request(ApiKey.FIND_COORDINATOR, min(version, 6),
                           {"key": group, "key_type": 0, "coordinator_keys": [group]})
    node = found["coordinators"][0] if version >= 4 else found
    assert (node["error_code"], node["port"]) == (0, port)

    joined = join(client, version, group)
    member, generation = joined["member_id"], joined["generation_id"]
    assert joined["leader"] == member and [m["member_id"] for m in joined["members"]] == [
        member]
    synced = client.request(ApiKey.SYNC_GROUP, min(version, 5), {
        "group_id": group, "generation_id": generation, "member_id": member,
        "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
        "assignments": [{"member_id": member, "assignment": b"partition-0"}]})
    assert (synced["error_code"], synced["assignment"]) == (0, b"partition-0")
    beat = client.request(ApiKey.HEARTBEAT, min(version, 4), {
        "group_id": group, "generation_id": generation, "member_id": member,
        "group_instance_id": None})
    assert beat["error_code"] == 0

    commit_version = min(max(version, 2), 8)  # OffsetCommit v0-1 are below the floor
    committed = client.request(ApiKey.OFFSET_COMMIT, commit_version, {
        "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
        "group_instance_id": None, "retention_time_ms": -1,
        "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": 0, "committed_offset": 40 + version,
             "committed_leader_epoch": -1, "commit_timestamp": -1,
             "committed_metadata": "note"}]}]})
    assert committed["topics"][0]["partitions"][0]["error_code"] == 0
    fetched = offsets_of(client, commit_version, group)
    assert (fetched["committed_offset"], fetched["metadata"]) == (40 + version, "note")

    (described,) = client.request(ApiKey.DESCRIBE_GROUPS, min(version, 5), {
        "groups": [group], "include_authorized_operations": False})["groups"]
    assert (described["error_code"], described["group_state"], described["protocol_data"]) == (
        0, "Stable", "range")
    (described_member,) = described["members"]
    assert described_member["client_id"] == "wire"
    assert described_member["client_host"] == "/127.0.0.1"
    assert described_member["member_assignment"] == b"partition-0"

    left = client.request(ApiKey.LEAVE_GROUP, min(version, 5), {
        "group_id": group, "member_id": member,
        "members": [{"member_id": member, "group_instance_id": None, "reason": None}]})
    assert left["error_code"] == 0

    listed = client.request(ApiKey.LIST_GROUPS, min(version, 4), {"states_filter": []})
    assert [(g["group_id"], g["protocol_type"]) for g in listed["groups"]] == [
        (group, "consumer")]
    if version >= 4:
        assert listed["groups"][0]["group_state"] == "Empty"

    if version == 0:  # OffsetDelete has one version: drop the offset of an empty group
        dropped = client.request(ApiKey.OFFSET_DELETE, 0, {
            "group_id": group, "topics": [{"name": TOPIC, "partitions": [
                {"partition_index": 0}]}]})
        assert dropped["error_code"] == 0
        assert offsets_of(client, 1, group)["committed_offset"] == -1
    deleted = client.request(ApiKey.DELETE_GROUPS, min(version, 2), {"groups_names": [group]})
    assert [(r["group_id"], r["error_code"]) for r in deleted["results"]] == [(group, 0)]
    assert client.request(ApiKey.LIST_GROUPS, min(version, 4),
                          {"states_filter": []})["groups"] == []
