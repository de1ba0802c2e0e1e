"""Dynamic broker configs through confluent-kafka's AdminClient on two real brokers:
DescribeConfigs on BROKER resources (static and dynamic sources, synonyms, documentation,
broker.rack), IncrementalAlterConfigs and the legacy AlterConfigs on a broker and on the
cluster default, written to ZooKeeper in Kafka's format with a change notification and
applied live by every broker (issue 15, item 5)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from kazoo.client import KazooClient

from brokerd.protocol import ApiKey, ErrorCode
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient
from tests.integration.brokerd.tenancy_fixtures import (
    add_api_key,
    grant_tenant_admin,
    login,
    set_tenant,
    start_secure_broker,
    wait_for,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def brokers(start_broker: Callable[..., BrokerProcess]) -> tuple[BrokerProcess, BrokerProcess]:
    return (start_broker(1, broker_rack="az-1", log_retention_hours="24"),
            start_broker(2, broker_rack="az-2"))


def _admin(*brokers: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": ",".join(b.bootstrap for b in brokers)})


def _describe(admin: AdminClient, resource: ConfigResource) -> dict[str, ConfigEntry]:
    future = admin.describe_configs([resource], request_timeout=15)[resource]
    return future.result(30)


def _incremental(admin: AdminClient, name: str, key: str, value: str | None,
                 op: AlterConfigOpType = AlterConfigOpType.SET) -> None:
    resource = ConfigResource(ResourceType.BROKER, name, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=op)])
    admin.incremental_alter_configs([resource], request_timeout=15)[resource].result(30)


def test_describe_a_broker(brokers: tuple[BrokerProcess, BrokerProcess]) -> None:
    admin = _admin(brokers[0])
    configs = _describe(admin, ConfigResource(ResourceType.BROKER, "1"))
    rack = configs["broker.rack"]
    assert rack.value == "az-1" and rack.is_read_only
    assert rack.source == ConfigSource.STATIC_BROKER_CONFIG.value
    hours = configs["log.retention.hours"]
    assert (hours.value, hours.source, hours.is_read_only) == (
        "24", ConfigSource.STATIC_BROKER_CONFIG.value, False)
    assert list(hours.synonyms) == ["log.retention.hours"]  # librdkafka keys them by name
    assert configs["log.cleaner.threads"].source == ConfigSource.DEFAULT_CONFIG.value
    assert "zookeeper.connect" in configs and configs["zookeeper.connect"].is_read_only
    assert _wire_describe(brokers[0], "") == []  # librdkafka cannot name "" itself
    # Documentation and types (v3+) when asked, over the wire (librdkafka does not ask).
    client = WireClient(brokers[0].port)
    answer = client.request(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [
        {"resource_type": 4, "resource_name": "1", "configuration_keys": ["log.cleaner.threads"]}],
        "include_synonyms": True, "include_documentation": True})
    client.close()
    (entry,) = answer["results"][0]["configs"]
    assert entry["config_type"] == 3 and "log cleaning" in entry["documentation"]  # INT


def test_incremental_alter_of_one_broker_is_stored_notified_and_described(
        brokers: tuple[BrokerProcess, BrokerProcess], zk: KazooClient) -> None:
    admin = _admin(*brokers)
    _incremental(admin, "1", "log.retention.ms", "60000")
    stored = json.loads(zk.get("/config/brokers/1")[0])
    assert stored == {"version": 1, "config": {"log.retention.ms": "60000"}}
    notes = [json.loads(zk.get(f"/config/changes/{child}")[0])
             for child in zk.get_children("/config/changes")]
    assert {"version": 2, "entity_path": "brokers/1"} in notes
    configs = _describe(admin, ConfigResource(ResourceType.BROKER, "1"))
    retention = configs["log.retention.ms"]
    assert (retention.value, retention.source) == (
        "60000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    # The other broker keeps its own value (a per-broker layer).
    other = _describe(admin, ConfigResource(ResourceType.BROKER, "2"))
    assert other["log.retention.ms"].value is None
    # A topic without its own retention inherits the broker's, and says so.
    admin.create_topics([NewTopic("inherits", 1, replica_assignment=[[1]])])["inherits"
                                                                            ].result(30)
    topic = _describe(admin, ConfigResource(ResourceType.TOPIC, "inherits"))
    assert (topic["retention.ms"].value, topic["retention.ms"].source) == (
        "60000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    _incremental(admin, "1", "log.retention.ms", None, AlterConfigOpType.DELETE)
    configs = _describe(admin, ConfigResource(ResourceType.BROKER, "1"))
    assert configs["log.retention.ms"].value is None


def test_read_only_keys_and_other_brokers_ids_are_refused(
        brokers: tuple[BrokerProcess, BrokerProcess]) -> None:
    admin = _admin(brokers[0])
    with pytest.raises(KafkaException) as refused:
        _incremental(admin, "1", "broker.rack", "az-9")
    assert refused.value.args[0].code() == KafkaError.INVALID_REQUEST
    assert "Cannot update these configs dynamically" in refused.value.args[0].str()
    with pytest.raises(KafkaException) as refused:
        _incremental(admin, "1", "log.retention.ms", "soon")
    assert refused.value.args[0].code() == KafkaError.INVALID_REQUEST


def _produce(broker: BrokerProcess, topic: str, size: int) -> KafkaError | None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.max.bytes": 1_000_000,
                         "message.send.max.retries": 0})
    outcome: list[KafkaError | None] = []
    producer.produce(topic, b"x" * size, on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(20)
    return outcome[0]


def _wire_describe(broker: BrokerProcess, name: str) -> list[dict]:
    client = WireClient(broker.port)
    answer = client.request(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [
        {"resource_type": 4, "resource_name": name, "configuration_keys": None}],
        "include_synonyms": True, "include_documentation": False})
    client.close()
    return answer["results"][0]["configs"]


def _wire_alter_default(broker: BrokerProcess, configs: dict[str, str]) -> dict:
    """AlterConfigs v2 on the cluster default (``""``, which librdkafka refuses to send)."""
    client = WireClient(broker.port, timeout=20)
    answer = client.request(ApiKey.ALTER_CONFIGS, 2, {"resources": [
        {"resource_type": 4, "resource_name": "", "configs": [
            {"name": k, "value": v} for k, v in configs.items()]}], "validate_only": False})
    client.close()
    return answer["responses"][0]


def test_cluster_default_applies_live_on_every_broker_and_legacy_alter_replaces(
        brokers: tuple[BrokerProcess, BrokerProcess], zk: KazooClient) -> None:
    admin = _admin(*brokers)
    futures = admin.create_topics([NewTopic("on-2", 1, replica_assignment=[[2]])])
    futures["on-2"].result(30)
    assert _produce(brokers[1], "on-2", 5000) is None
    assert _wire_alter_default(brokers[0], {"message.max.bytes": "2000"})["error_code"] == 0
    assert json.loads(zk.get("/config/brokers/<default>")[0])["config"] == {
        "message.max.bytes": "2000"}
    # Broker 2 learns the default through its watch and refuses the large batch.
    wait_for(lambda: _produce(brokers[1], "on-2", 5000) is not None, timeout=15, interval=0.2)
    error = _produce(brokers[1], "on-2", 5000)
    assert error is not None and error.code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert [(c["name"], c["value"], c["config_source"]) for c in
            _wire_describe(brokers[1], "")] == [
        ("message.max.bytes", "2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)]
    # A per-broker value beats the default (confluent-kafka's legacy alter_configs) ...
    resource = ConfigResource(ResourceType.BROKER, "2",
                              set_config={"message.max.bytes": "10000"})
    admin.alter_configs([resource], request_timeout=15)[resource].result(30)
    assert _produce(brokers[1], "on-2", 5000) is None
    entry = _describe(admin, ConfigResource(ResourceType.BROKER, "2"))["message.max.bytes"]
    assert (entry.value, entry.source) == ("10000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    # ... and the legacy API replaces the whole layer: without it, the default is back.
    resource = ConfigResource(ResourceType.BROKER, "2", set_config={"log.cleaner.threads": "2"})
    admin.alter_configs([resource], request_timeout=15)[resource].result(30)
    error = _produce(brokers[1], "on-2", 5000)
    assert error is not None and error.code() == KafkaError.MSG_SIZE_TOO_LARGE
    configs = _describe(admin, ConfigResource(ResourceType.BROKER, "2"))
    assert (configs["log.cleaner.threads"].value, configs["log.cleaner.threads"].source) == (
        "2", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    assert configs["message.max.bytes"].source == (
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)


def test_tenants_may_neither_describe_nor_alter_broker_configs(
        zk_connect: str, zk: KazooClient, tmp_path: Path) -> None:
    secure = start_secure_broker(zk_connect, tmp_path)
    try:
        set_tenant(zk, "acme")
        key = add_api_key(zk, "acme", "app")
        grant_tenant_admin(zk, key, "acme")
        client = login(secure.sasl_port, key)
        resource = {"resource_type": 4, "resource_name": "1"}
        described = client.request(ApiKey.DESCRIBE_CONFIGS, 4, {
            "resources": [{**resource, "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False})
        assert described["results"][0]["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert described["results"][0]["configs"] == []
        altered = client.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
            {**resource, "configs": [{"name": "message.max.bytes", "config_operation": 0,
                                      "value": "1"}]}], "validate_only": False})
        assert altered["responses"][0]["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        legacy = client.request(ApiKey.ALTER_CONFIGS, 2, {"resources": [
            {**resource, "configs": [{"name": "message.max.bytes", "value": "1"}]}],
            "validate_only": False})
        assert legacy["responses"][0]["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert zk.exists("/config/brokers/1") is None
    finally:
        secure.stop()
