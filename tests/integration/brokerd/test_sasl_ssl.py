"""SASL_SSL on a live broker: TLS with the local CA of scripts/certs.sh, SCRAM-SHA-512 with
confluent-kafka, Fetch over TLS (the pread path: sendfile cannot encrypt)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.integration.brokerd.tenancy_fixtures import (
    CERTS_SCRIPT,
    SecureBroker,
    add_api_key,
    grant_tenant_admin,
    set_tenant,
    start_secure_broker,
)


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
    seen: list[bytes] = []
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
