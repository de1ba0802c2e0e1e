"""LeaderAndIsr v5 against a real broker, spoken with our own codec: a pushed state newer
than ZooKeeper's is what Metadata answers at once (it cannot have been read), an older
one and one from an older controller epoch change nothing."""

from __future__ import annotations

import time
import uuid

import pytest

from brokerd.protocol import ApiKey, ErrorCode
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient

pytestmark = pytest.mark.integration


def partition_view(client: WireClient, topic: str) -> tuple[uuid.UUID, dict]:
    response = client.request(ApiKey.METADATA, 12, {"topics": [{"name": topic}]})
    [answer] = response["topics"]
    return answer["topic_id"], answer["partitions"][0]


def push(client: WireClient, epoch: int, topic: str, topic_id: uuid.UUID, leader_epoch: int,
         version: int, isr: list[int]) -> dict:
    return client.request(ApiKey.LEADER_AND_ISR, 5, {
        "controller_id": 1, "controller_epoch": epoch, "broker_epoch": -1, "type": 0,
        "topic_states": [{"topic_name": topic, "topic_id": topic_id, "partition_states": [{
            "partition_index": 0, "controller_epoch": epoch, "leader": 1,
            "leader_epoch": leader_epoch, "isr": isr, "partition_epoch": version,
            "replicas": [1]}]}], "live_leaders": []})


def test_pushed_states_apply_by_version_and_controller_epoch(broker: BrokerProcess) -> None:
    client = WireClient(broker.port)
    response = client.request(ApiKey.CREATE_TOPICS, 5, {
        "topics": [{"name": "pushed", "num_partitions": 1, "replication_factor": 1}],
        "timeout_ms": 5000})
    assert response["topics"][0]["error_code"] == 0, response
    deadline = time.monotonic() + 10
    while (view := partition_view(client, "pushed"))[1]["leader_id"] != 1:
        assert time.monotonic() < deadline, view
        time.sleep(0.1)
    topic_id, partition = view
    epoch = partition["leader_epoch"]

    # Newer than anything ZooKeeper holds (version 50): served from the push alone.
    answer = push(client, 5, "pushed", topic_id, epoch + 1, 50, [1])
    assert answer["error_code"] == 0
    assert answer["topics"][0]["partition_errors"][0]["error_code"] == 0
    assert partition_view(client, "pushed")[1]["leader_epoch"] == epoch + 1

    # An older version changes nothing; an older controller epoch is refused whole.
    push(client, 5, "pushed", topic_id, epoch + 7, 49, [1])
    stale = push(client, 4, "pushed", topic_id, epoch + 9, 60, [1])
    assert stale["error_code"] == ErrorCode.STALE_CONTROLLER_EPOCH
    assert partition_view(client, "pushed")[1]["leader_epoch"] == epoch + 1

    # Another incarnation's id: left to the watches.
    other = push(client, 5, "pushed", uuid.uuid4(), epoch + 3, 70, [1])
    assert other["topics"][0]["partition_errors"][0]["error_code"] == \
        ErrorCode.UNKNOWN_TOPIC_ID
    client.close()
