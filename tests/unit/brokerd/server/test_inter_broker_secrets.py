"""The inter-broker credentials never leave the broker through DescribeConfigs: JAAS lines
are sensitive (Kafka's PASSWORD type), broker-wide and per listener."""

from __future__ import annotations

from brokerd.server import broker_configs

JAAS = 'x required username="broker" password="s3cret";'


def test_jaas_lines_are_described_without_their_value() -> None:
    static = {"sasl.jaas.config": JAAS,
              "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": JAAS,
              "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512"}
    described = {c.name: c for c in broker_configs.describe_broker(static, {}, {})}
    for name in ("sasl.jaas.config", "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"):
        assert described[name].sensitive and described[name].value is None
        assert all(value is None for _, value, _ in described[name].synonyms)
    assert described["sasl.mechanism.inter.broker.protocol"].value == "SCRAM-SHA-512"
    assert "s3cret" not in repr(list(described.values()))
