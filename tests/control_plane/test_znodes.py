"""Kafka's ZooKeeper formats as the control plane writes and reads them (pure, no ZooKeeper)."""

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


def test_kafka_topic_ids_read_back_as_uuids() -> None:
    """Topic ids are brokerd's now (CreateTopics); the control plane only reads them."""
    one = uuid.UUID("00000000-0000-0000-0000-000000000001")
    assert znodes.uuid_from_kafka("AAAAAAAAAAAAAAAAAAAAAQ") == one
