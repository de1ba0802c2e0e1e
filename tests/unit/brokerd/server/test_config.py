"""brokerd.config: properties parsing, listeners, log defaults, flag precedence."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from brokerd.__main__ import build_parser, config_from_args
from brokerd.config import ConfigError, Endpoint, build_config, parse_listeners, parse_properties
from brokerd.server.component_settings import fetch_settings

REQUIRED = {"broker.id": "1", "listeners": "PLAINTEXT://127.0.0.1:9092",
            "zookeeper.connect": "zk:2181/kafkasaas", "log.dirs": "/a,/b"}


def test_parse_properties_formats_and_comments() -> None:
    text = "# comment\n! also\n\n a = 1 \nb: two\nc=x=y\nurl=PLAINTEXT://h:1\n"
    assert parse_properties(text) == {"a": "1", "b": "two", "c": "x=y", "url": "PLAINTEXT://h:1"}


@pytest.mark.parametrize("text", ["novalue\n", "a=1 \\\n"])
def test_parse_properties_rejects_what_it_cannot_read(text: str) -> None:
    with pytest.raises(ConfigError, match="line 1"):
        parse_properties(text)


def test_listeners() -> None:
    assert parse_listeners("plaintext://127.0.0.1:9092, SASL_SSL://:9292") == (
        Endpoint("PLAINTEXT", "127.0.0.1", 9092), Endpoint("SASL_SSL", "0.0.0.0", 9292))
    for bad in ("127.0.0.1:9092", "PLAINTEXT://h", "A://h:1,A://h:2", ""):
        with pytest.raises(ConfigError):
            parse_listeners(bad)


def test_defaults_and_log_defaults_with_units() -> None:
    config = build_config({**REQUIRED, "log.retention.hours": "2", "log.retention.minutes": "3",
                           "log.segment.bytes": "1048576", "log.roll.hours": "1"})
    assert config.log_dirs == (Path("/a"), Path("/b"))
    assert config.auto_create_topics_enable and config.num_partitions == 1
    assert config.socket_request_max_bytes == 104_857_600
    # the finer unit wins, as in Kafka
    assert config.log_defaults == {"retention.ms": "180000", "segment.bytes": "1048576",
                                   "segment.ms": "3600000"}
    assert config.advertised == config.listeners


@pytest.mark.parametrize("change", [{"broker.id": "-1"}, {"broker.id": "x"},
                                    {"num.partitions": "0"}, {"log.dirs": ""},
                                    {"auto.create.topics.enable": "yes"},
                                    {"socket.fetch.transfer": "mmap"}])
def test_invalid_values_are_rejected(change: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        build_config({**REQUIRED, **change})


def test_flags_override_the_file(tmp_path: Path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text("broker.id=7\nlisteners=PLAINTEXT://h:1\nzookeeper.connect=z:1\n"
                          "log.dirs=/x\nnum.partitions=3\nauto.create.topics.enable=false\n")
    args = build_parser().parse_args(["serve", "--config", str(properties), "--broker-id", "2",
                                      "--metrics-port", "9102"])
    config = config_from_args(args)
    assert (config.broker_id, config.num_partitions, config.metrics_port) == (2, 3, 9102)
    assert not config.auto_create_topics_enable
    assert config.listeners == (Endpoint("PLAINTEXT", "h", 1),)


def test_inter_broker_listener_must_exist_and_sasl_needs_credentials() -> None:
    with pytest.raises(ConfigError, match="names none"):
        build_config({**REQUIRED, "inter.broker.listener.name": "INTERNAL"})
    sasl = {**REQUIRED, "listeners": "PLAINTEXT://:9092,SASL_PLAINTEXT://:9192",
            "inter.broker.listener.name": "SASL_PLAINTEXT"}
    with pytest.raises(ConfigError, match="sasl.mechanism.inter.broker.protocol"):
        build_config(sasl)
    config = build_config({**sasl, "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
                           "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config":
                           'x required username="broker" password="p";'})
    assert config.inter_broker_listener_name == "SASL_PLAINTEXT"


def test_client_auth_keys_are_validated() -> None:
    with pytest.raises(ConfigError, match="ssl.client.auth"):
        build_config({**REQUIRED, "ssl.client.auth": "sometimes"})
    with pytest.raises(ConfigError, match="ssl.principal.mapping.rules"):
        build_config({**REQUIRED, "ssl.principal.mapping.rules": "RULE:x"})


def test_fetch_session_cache_keys() -> None:
    default = build_config(REQUIRED)
    assert (default.max_incremental_fetch_session_cache_slots,
            default.min_incremental_fetch_session_eviction_ms) == (1000, 120_000)
    config = build_config({**REQUIRED, "max.incremental.fetch.session.cache.slots": "0",
                           "min.incremental.fetch.session.eviction.ms": "500"})
    assert (config.max_incremental_fetch_session_cache_slots,
            config.min_incremental_fetch_session_eviction_ms) == (0, 500)
    for key in ("max.incremental.fetch.session.cache.slots",
                "min.incremental.fetch.session.eviction.ms"):
        with pytest.raises(ConfigError, match=key):
            build_config({**REQUIRED, key: "-1"})


def test_metrics_bind_to_the_first_listeners_host_unless_told_otherwise() -> None:
    assert build_config(REQUIRED).metrics_bind_address == "127.0.0.1"
    assert build_config({**REQUIRED, "listeners": "PLAINTEXT://:9092"}
                        ).metrics_bind_address == "0.0.0.0"
    assert build_config({**REQUIRED, "metrics.bind.address": "10.0.0.5"}
                        ).metrics_bind_address == "10.0.0.5"


def test_replica_selector_class_is_kafkas_or_refused() -> None:
    assert build_config(REQUIRED).replica_selector_class is None
    assert build_config({**REQUIRED, "replica.selector.class": "RackAwareReplicaSelector"}
                        ).replica_selector_class == (
        "org.apache.kafka.common.replica.RackAwareReplicaSelector")
    with pytest.raises(ConfigError, match="replica.selector.class"):
        build_config({**REQUIRED, "replica.selector.class": "Nearest"})


def test_prefixed_reauth_lifetimes_must_be_whole_milliseconds() -> None:
    key = "listener.name.sasl_ssl.plain.connections.max.reauth.ms"
    assert build_config({**REQUIRED, key: "1000"}).static_props[key] == "1000"
    with pytest.raises(ConfigError, match="connections.max.reauth.ms"):
        build_config({**REQUIRED, key: "-5"})


def test_log_max_open_files_defaults_to_half_the_descriptor_limit() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert build_config(REQUIRED).log_max_open_files == soft // 2
    assert build_config({**REQUIRED, "log.max.open.files": "50"}).log_max_open_files == 50
    with pytest.raises(ConfigError, match="log.max.open.files"):
        build_config({**REQUIRED, "log.max.open.files": "0"})


def test_the_inter_broker_protocol_version_decides_truncation_on_fetch() -> None:
    assert fetch_settings(build_config(REQUIRED)).truncation_on_fetch
    older = build_config({**REQUIRED, "inter.broker.protocol.version": "2.6"})
    assert not fetch_settings(older).truncation_on_fetch
    with pytest.raises(ConfigError, match="inter.broker.protocol.version"):
        build_config({**REQUIRED, "inter.broker.protocol.version": "latest"})
