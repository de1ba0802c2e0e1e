"""Kafka's ZooKeeper formats and the replica placement rule (pure, no ZooKeeper)."""

import json
import uuid

import pytest

from tenants import znodes


def test_entity_paths_follow_kafka_naming() -> None:
    assert znodes.entity_path("acme.app", None) == "users/acme.app"
    assert znodes.entity_path("acme.app", "c-1") == "users/acme.app/clients/c-1"
    assert znodes.entity_path("<default>", "<default>") == "users/<default>/clients/<default>"
    assert znodes.entity_path(None, "my client/x") == "clients/my%20client%2Fx"
    with pytest.raises(ValueError):
        znodes.entity_path(None, None)


def test_payloads_are_kafka_json() -> None:
    assert json.loads(znodes.config_payload({"producer_byte_rate": "1024"})) == {
        "version": 1, "config": {"producer_byte_rate": "1024"}}
    assert json.loads(znodes.change_notification("clients/app-1")) == {
        "version": 2, "entity_path": "clients/app-1"}


def test_topic_payload_has_kafka_topic_id() -> None:
    topic_id = uuid.UUID("00000000-0000-0000-0000-000000000001")
    payload = json.loads(znodes.topic_payload(topic_id, {"0": [1, 2], "1": [2, 3]}))
    assert payload["version"] == 3
    assert payload["topic_id"] == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert payload["partitions"] == {"0": [1, 2], "1": [2, 3]}


def test_round_robin_assignment_spreads_leaders_and_replicas() -> None:
    assignment = znodes.assign_replicas(6, 3, [3, 1, 2], start=0)
    leaders = [replicas[0] for replicas in assignment.values()]
    assert sorted(leaders) == [1, 1, 2, 2, 3, 3]
    assert all(len(set(replicas)) == 3 for replicas in assignment.values())
    assert znodes.assign_replicas(2, 1, [5], start=7) == {"0": [5], "1": [5]}
    with pytest.raises(ValueError, match="replication factor 3"):
        znodes.assign_replicas(1, 3, [1, 2], start=0)
