"""SASL on a live broker: PLAIN and SCRAM logins against control-plane credentials in
ZooKeeper, the pre-authentication API allow-list, failures, and API-key revocation."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from brokerd.protocol import ApiKey as Api
from brokerd.protocol import ErrorCode
from tests.integration.brokerd.broker_process import WireClient
from tests.integration.brokerd.tenancy_fixtures import (
    SecureBroker,
    add_api_key,
    delete_api_key,
    grant_tenant_admin,
    login,
    set_tenant,
    start_secure_broker,
    wait_for,
)


@pytest.fixture
def secure(zk_connect: str, zk: KazooClient, tmp_path: Path) -> Iterator[SecureBroker]:
    broker = start_secure_broker(zk_connect, tmp_path)
    yield broker
    broker.stop()


def _plain_login(client: WireClient, username: str, password: str) -> dict:
    handshake = client.request(Api.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert handshake["error_code"] == 0 and "SCRAM-SHA-512" in handshake["mechanisms"]
    token = b"\0" + username.encode() + b"\0" + password.encode()
    return client.request(Api.SASL_AUTHENTICATE, 2, {"auth_bytes": token})


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except (ConnectionError, TimeoutError):
        return True


def test_kafka_python_produces_and_consumes_over_sasl_plaintext_plain(
        secure: SecureBroker, zk: KazooClient) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    set_tenant(zk, "acme")
    key = add_api_key(zk, "acme", "orders")
    grant_tenant_admin(zk, key, "acme")
    auth = {"bootstrap_servers": secure.sasl_bootstrap, "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN", "sasl_plain_username": key.key,
            "sasl_plain_password": key.secret}
    producer = KafkaProducer(**auth, acks="all")
    for i in range(20):
        producer.send("orders", f"order-{i}".encode()).get(timeout=10)
    producer.close()
    consumer = KafkaConsumer(**auth, consumer_timeout_ms=3000, auto_offset_reset="earliest",
                             enable_auto_commit=False)
    consumer.assign([TopicPartition("orders", 0)])
    values = [message.value for message in consumer]
    consumer.close()
    assert values == [f"order-{i}".encode() for i in range(20)]
    assert "acme.orders" in zk.get_children("/brokers/topics")  # stored in acme's namespace


def test_confluent_scram_sha_512_round_trip(secure: SecureBroker, zk: KazooClient) -> None:
    from confluent_kafka import Consumer, Producer

    set_tenant(zk, "globex")
    key = add_api_key(zk, "globex", "billing")
    grant_tenant_admin(zk, key, "globex")
    auth = {"bootstrap.servers": secure.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": key.key,
            "sasl.password": key.secret}
    producer = Producer({**auth, "enable.idempotence": True})
    delivered: list[object] = []
    for i in range(10):
        producer.produce("invoices", f"inv-{i}".encode(),
                         on_delivery=lambda err, msg: delivered.append(err or msg.offset()))
    assert producer.flush(15) == 0
    assert delivered == list(range(10))
    consumer = Consumer({**auth, "group.id": "readers", "auto.offset.reset": "earliest"})
    consumer.subscribe(["invoices"])
    seen: list[bytes | None] = []
    deadline = time.monotonic() + 30
    while len(seen) < 10 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.append(message.value())
    consumer.commit(asynchronous=False)
    consumer.close()
    assert seen == [f"inv-{i}".encode() for i in range(10)]


def test_wrong_secret_fails_with_sasl_authentication_failed_and_a_log_line(
        secure: SecureBroker, zk: KazooClient) -> None:
    key = add_api_key(zk, "acme", "orders")
    for _attempt in range(3):
        client = WireClient(secure.sasl_port)
        answer = _plain_login(client, key.key, "not-the-secret")
        assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "invalid credentials" in answer["error_message"]
        assert _closed(client.sock)
        client.close()
    lines = [line for line in secure.process.output().splitlines()
             if "failed SASL login" in line and key.key in line]
    assert len(lines) == 1  # three failures, one line a minute


def test_only_handshake_apis_before_authentication(secure: SecureBroker) -> None:
    client = WireClient(secure.sasl_port)
    versions = client.request(Api.API_VERSIONS, 3, {})
    assert versions["error_code"] == 0
    client.send(Api.METADATA, 9, {"topics": None})
    assert _closed(client.sock)
    client.close()


def test_deleted_api_key_closes_sessions_and_refuses_logins_within_two_seconds(
        secure: SecureBroker, zk: KazooClient) -> None:
    key = add_api_key(zk, "acme", "orders")
    grant_tenant_admin(zk, key, "acme")
    session = WireClient(secure.sasl_port)
    assert wait_for(lambda: _plain_login(WireClient(secure.sasl_port), key.key,
                                         key.secret)["error_code"] == 0)
    assert _plain_login(session, key.key, key.secret)["error_code"] == 0
    assert session.request(Api.METADATA, 9, {"topics": None})["topics"] == []
    deleted = time.monotonic()
    delete_api_key(zk, key)
    session.sock.settimeout(2.0)
    assert _closed(session.sock)

    def refused() -> bool:
        return _plain_login(WireClient(secure.sasl_port), key.key,
                            key.secret)["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    wait_for(refused, timeout=2.0)
    assert time.monotonic() - deleted < 2.0


def test_scram_sha_256_with_kafka_python_and_unknown_mechanism(secure: SecureBroker,
                                                              zk: KazooClient) -> None:
    from kafka import KafkaProducer

    set_tenant(zk, "acme")
    key = add_api_key(zk, "acme", f"svc-{uuid.uuid4().hex[:6]}")
    grant_tenant_admin(zk, key, "acme")
    client = WireClient(secure.sasl_port)
    refused = client.request(Api.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
    assert refused["error_code"] == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert set(refused["mechanisms"]) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
    client.close()
    producer = KafkaProducer(bootstrap_servers=secure.sasl_bootstrap,
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                             sasl_plain_username=key.key, sasl_plain_password=key.secret)
    metadata = producer.send("audit", b"x").get(timeout=10)
    producer.close()
    assert metadata.offset == 0


def test_handshake_v0_then_a_raw_plain_token(secure: SecureBroker, zk: KazooClient) -> None:
    import struct

    from tests.integration.brokerd.broker_process import recv_exactly

    key = add_api_key(zk, "acme", "legacy")
    login(secure.sasl_port, key).close()  # the broker knows the key now
    client = WireClient(secure.sasl_port)
    assert client.request(Api.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})["error_code"] == 0
    token = b"\0" + key.key.encode() + b"\0" + key.secret.encode()
    client.sock.sendall(struct.pack(">i", len(token)) + token)  # no request header at all
    (size,) = struct.unpack(">i", recv_exactly(client.sock, 4))
    assert size == 0  # PLAIN's empty server token: authenticated
    assert client.request(Api.METADATA, 9, {"topics": None})["topics"] == []
    client.close()
    wrong = WireClient(secure.sasl_port)
    assert wrong.request(Api.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})["error_code"] == 0
    bad = b"\0" + key.key.encode() + b"\0nope"
    wrong.sock.sendall(struct.pack(">i", len(bad)) + bad)
    assert _closed(wrong.sock)
    wrong.close()
