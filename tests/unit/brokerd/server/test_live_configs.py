"""brokerd.server.live_configs: a dynamic broker config change reaches every hosted log
(topic overrides still win), resets the follower throttle, and only the invalid keys of a layer are
skipped."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from brokerd.config import build_config
from brokerd.server.live_configs import LiveBrokerConfigs
from brokerd.storage import LogConfig

PROPS = {"broker.id": "1", "listeners": "PLAINTEXT://127.0.0.1:9092",
         "zookeeper.connect": "zk:2181", "log.dirs": "/tmp/x", "log.retention.hours": "24"}


class _Broker:
    def __init__(self) -> None:
        self.config = build_config(PROPS)
        self.default_log_config = LogConfig.from_props(self.config.log_defaults)
        self.cache = SimpleNamespace(topics={
            "plain": SimpleNamespace(config={}),
            "own": SimpleNamespace(config={"retention.ms": "5"})})
        self.applied: dict[str, LogConfig] = {}
        self.rates: list[float] = []
        self.replicas = SimpleNamespace(
            update_config=lambda name, config: self.applied.__setitem__(name, config),
            fetchers=SimpleNamespace(throttle=SimpleNamespace(
                set_rate=lambda rate, now: self.rates.append(rate))),
            leader_throttle=SimpleNamespace(limit=SimpleNamespace(
                set_rate=lambda rate, now: self.leader_rates.append(rate))))
        self.leader_rates: list[float] = []

    def log_config_for(self, topic_config: dict[str, Any]) -> LogConfig:
        return self.default_log_config.with_overrides(topic_config)


def test_log_defaults_reach_every_log_and_topic_overrides_still_win() -> None:
    broker = _Broker()
    live = LiveBrokerConfigs(broker)  # type: ignore[arg-type]
    live.changed({"log.retention.ms": "60000"}, {"message.max.bytes": "2000"})
    assert broker.default_log_config.retention_ms == 60_000
    assert broker.applied["plain"].retention_ms == 60_000
    assert broker.applied["plain"].max_message_bytes == 2000
    assert broker.applied["own"].retention_ms == 5
    assert (live.default_layer, live.own_layer) == (
        {"log.retention.ms": "60000"}, {"message.max.bytes": "2000"})


def test_the_replication_throttles_follow_the_layers() -> None:
    broker = _Broker()
    live = LiveBrokerConfigs(broker)  # type: ignore[arg-type]
    live.changed({"follower.replication.throttled.rate": "1000"}, {})
    live.changed({"follower.replication.throttled.rate": "1000"},
                 {"follower.replication.throttled.rate": str(2**63 - 1)})
    assert broker.rates == [1000.0, 0.0]  # Long.MAX_VALUE is Kafka's "no limit"
    assert broker.leader_rates == [0.0, 0.0]
    live.changed({"leader.replication.throttled.rate": "300"}, {})
    assert broker.leader_rates[-1] == 300.0 and broker.rates[-1] == 0.0


def test_only_the_invalid_keys_of_a_layer_are_skipped() -> None:
    broker = _Broker()
    live = LiveBrokerConfigs(broker)  # type: ignore[arg-type]
    before = broker.default_log_config
    live.changed({"log.retention.ms": "soon"}, {"listeners": "PLAINTEXT://0.0.0.0:1"})
    assert broker.default_log_config == before and broker.applied == {}
    assert (live.default_layer, live.own_layer) == ({}, {})
    live.changed({"log.retention.ms": "soon", "message.max.bytes": "3000",
                  "follower.replication.throttled.rate": "500"},
                 {"listeners": "PLAINTEXT://0.0.0.0:1", "log.retention.ms": "60000",
                  "log.cleaner.threads": "0"})
    assert live.default_layer == {"message.max.bytes": "3000",
                                  "follower.replication.throttled.rate": "500"}
    assert live.own_layer == {"log.retention.ms": "60000"}
    assert broker.applied["plain"].max_message_bytes == 3000
    assert broker.applied["plain"].retention_ms == 60_000
    assert broker.rates[-1] == 500.0


def test_log_cleaner_threads_resize_the_cleaner_pool() -> None:
    broker = _Broker()
    live = LiveBrokerConfigs(broker)  # type: ignore[arg-type]
    sizes: list[int] = []
    live.on_cleaner_threads = sizes.append
    assert live.cleaner_threads == 1
    live.changed({"log.cleaner.threads": "2"}, {})
    live.changed({"log.cleaner.threads": "2"}, {"log.cleaner.threads": "4"})
    live.changed({}, {})
    assert sizes == [2, 4, 1]
