"""brokerd.server.broker_configs: which broker configs are dynamic, validation, layering,
synonyms and the DescribeConfigs entries, as Kafka's DynamicBrokerConfig does them."""

from __future__ import annotations

import pytest

from brokerd.server import broker_configs as rules
from brokerd.server.handlers.alter_configs import replacement

STATIC = {"broker.id": "1", "listeners": "PLAINTEXT://127.0.0.1:9092", "broker.rack": "az-1",
          "log.retention.hours": "24", "ssl.key.password": "hunter2"}


def _by_name(configs: list[rules.DescribedConfig]) -> dict[str, rules.DescribedConfig]:
    return {config.name: config for config in configs}


def test_only_dynamic_keys_may_be_altered() -> None:
    rules.validate_layer({"log.retention.ms": "60000", "log.cleaner.threads": "2",
                          "follower.replication.throttled.rate": "1000"}, STATIC, {})
    with pytest.raises(rules.InvalidBrokerConfig,
                       match=r"Cannot update these configs dynamically: \['broker.rack', 'x'\]"):
        rules.validate_layer({"broker.rack": "az-2", "x": "1"}, STATIC, {})


@pytest.mark.parametrize("layer", [{"log.retention.ms": "soon"},
                                   {"unclean.leader.election.enable": "maybe"},
                                   {"log.cleanup.policy": "shred"},
                                   {"min.insync.replicas": "0"},
                                   {"log.cleaner.threads": "0"}])
def test_values_are_checked_as_the_log_would_use_them(layer: dict[str, str]) -> None:
    with pytest.raises(rules.InvalidBrokerConfig):
        rules.validate_layer(layer, STATIC, {})


def test_per_broker_beats_default_beats_static_and_the_finest_unit_wins() -> None:
    assert rules.effective_log_defaults(STATIC, {}, {})["retention.ms"] == str(24 * 3_600_000)
    assert rules.effective_log_defaults(STATIC, {"log.retention.hours": "2"}, {}
                                        )["retention.ms"] == str(2 * 3_600_000)
    assert rules.effective_log_defaults(STATIC, {"log.retention.hours": "2"},
                                        {"log.retention.ms": "5000"})["retention.ms"] == "5000"
    assert rules.effective_log_defaults({"log.retention.ms": "7"}, {"log.retention.hours": "2"},
                                        {})["retention.ms"] == "7"  # Kafka: ms beats hours
    assert rules.effective_log_defaults({}, {}, {"message.max.bytes": "2000000"}
                                        )["max.message.bytes"] == "2000000"


def test_describe_broker_sources_synonyms_and_read_only() -> None:
    configs = _by_name(rules.describe_broker(STATIC, {"log.retention.ms": "600000"},
                                             {"log.retention.ms": "1000"}))
    retention = configs["log.retention.ms"]
    assert (retention.value, retention.source, retention.read_only) == (
        "1000", rules.DYNAMIC_BROKER_CONFIG, False)
    assert retention.synonyms == (
        ("log.retention.ms", "1000", rules.DYNAMIC_BROKER_CONFIG),
        ("log.retention.ms", "600000", rules.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.retention.hours", "24", rules.STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", rules.DEFAULT_CONFIG))
    hours = configs["log.retention.hours"]  # the finer keys overriding it are not its synonyms
    assert hours.synonyms == (("log.retention.hours", "24", rules.STATIC_BROKER_CONFIG),
                              ("log.retention.hours", "168", rules.DEFAULT_CONFIG))
    rack = configs["broker.rack"]
    assert (rack.value, rack.source, rack.read_only) == ("az-1", rules.STATIC_BROKER_CONFIG, True)
    threads = configs["log.cleaner.threads"]
    assert (threads.value, threads.source, threads.type) == ("1", rules.DEFAULT_CONFIG, rules.INT)
    assert threads.doc and not threads.read_only
    assert configs["listeners"].read_only and configs["listeners"].doc is None
    secret = configs["ssl.key.password"]
    assert secret.sensitive and secret.value is None and secret.synonyms[0][1] is None


def test_describe_default_lists_only_the_cluster_wide_layer() -> None:
    configs = rules.describe_default({"message.max.bytes": "2000000"})
    assert [(c.name, c.value, c.source) for c in configs] == [
        ("message.max.bytes", "2000000", rules.DYNAMIC_DEFAULT_BROKER_CONFIG)]


def test_topic_values_inherited_from_a_broker_layer_name_it() -> None:
    assert rules.topic_key_source("retention.ms", {}, {"log.retention.ms": "1"}, STATIC) == (
        rules.DYNAMIC_BROKER_CONFIG)
    assert rules.topic_key_source("retention.ms", {"log.retention.ms": "1"}, {}, STATIC) == (
        rules.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert rules.topic_key_source("retention.ms", {}, {}, STATIC) == rules.STATIC_BROKER_CONFIG
    assert rules.topic_key_source("segment.bytes", {}, {}, STATIC) is None


def test_alter_configs_replaces_the_whole_config_and_refuses_nulls() -> None:
    assert replacement([{"name": "a", "value": "1"}, {"name": "b", "value": "2"}]) == {
        "a": "1", "b": "2"}
    with pytest.raises(ValueError, match="Null value not supported"):
        replacement([{"name": "a", "value": None}])
