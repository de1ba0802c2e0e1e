"""TLS listeners on a live broker: SASL_SSL with the local CA of scripts/certs.sh and
SCRAM-SHA-512 via confluent-kafka, Fetch over TLS (the pread path: sendfile cannot
encrypt), and the SSL listener without SASL (operator)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.integration.brokerd.broker_process import BrokerProcess
from tests.integration.brokerd.tenancy_fixtures import (
    CERTS_SCRIPT,
    SecureBroker,
    add_api_key,
    grant_tenant_admin,
    set_tenant,
    start_secure_broker,
)
from tests.support.confluent_admin import ClientConfig
from tests.support.services import free_port


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("certs")
    subprocess.run([str(CERTS_SCRIPT), str(directory)], check=True, capture_output=True)
    return directory


@pytest.fixture
def secure(zk_connect: str, tmp_path: Path, tls_dir: Path) -> Iterator[SecureBroker]:
    broker = start_secure_broker(zk_connect, tmp_path, tls_dir=tls_dir)
    yield broker
    broker.stop()


def test_confluent_scram_sha_512_over_sasl_ssl(secure: SecureBroker, zk: KazooClient) -> None:
    from confluent_kafka import Consumer, Producer

    set_tenant(zk, "acme")
    key = add_api_key(zk, "acme", "orders")
    grant_tenant_admin(zk, key, "acme")
    auth = {"bootstrap.servers": secure.sasl_ssl_bootstrap, "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(secure.ca_file), "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": key.key, "sasl.password": key.secret}
    producer = Producer({**auth, "linger.ms": 5})
    payloads = [f"secret-{i}".encode() * 500 for i in range(200)]  # > 1 MiB: several fetches
    errors: list[object] = []
    for payload in payloads:
        producer.produce("orders", payload, on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(20) == 0 and errors == [None] * len(payloads)
    consumer = Consumer({**auth, "group.id": "audit", "auto.offset.reset": "earliest",
                         "max.partition.fetch.bytes": 65536})
    consumer.subscribe(["orders"])
    seen: list[bytes | None] = []
    deadline = time.monotonic() + 30
    while len(seen) < len(payloads) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            assert message.topic() == "orders"
            seen.append(message.value())
    consumer.close()
    assert seen == payloads


def test_tls_rejects_a_client_that_does_not_trust_the_ca(secure: SecureBroker,
                                                          zk: KazooClient) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    key = add_api_key(zk, "acme", "orders")
    admin = AdminClient({"bootstrap.servers": secure.sasl_ssl_bootstrap,
                         "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
                         "sasl.username": key.key, "sasl.password": key.secret})
    with pytest.raises(KafkaException, match="transport failure"):
        admin.list_topics(timeout=3)
    assert secure.process.process is not None and secure.process.process.poll() is None


def test_ssl_listener_without_sasl_is_an_operator_listener(zk_connect: str, tmp_path: Path,
                                                           tls_dir: Path) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    ssl_port = free_port()
    broker = BrokerProcess(zk_connect, tmp_path / "logs",
                           properties={"ssl.keystore.location": str(tls_dir / "broker.pem")},
                           extra_listeners=(f"SSL://127.0.0.1:{ssl_port}",)).start()
    try:
        config: ClientConfig = {"bootstrap.servers": f"127.0.0.1:{ssl_port}",
                                "security.protocol": "SSL",
                                "ssl.ca.location": str(tls_dir / "ca.pem")}
        producer = Producer(config)
        producer.produce("__ops", b"operator names are not mapped")
        assert producer.flush(15) == 0
        topics = AdminClient(config).list_topics(timeout=10).topics
        assert "__ops" in topics  # the real cluster name: ANONYMOUS is an operator
    finally:
        broker.stop(timeout=15)
