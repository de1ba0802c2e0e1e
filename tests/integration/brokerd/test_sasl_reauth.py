"""SASL re-authentication (KIP-368) on a live broker with a short ``connections.max.reauth.ms``:
the lifetime is advertised, an expired session is closed at its next request, a
re-authentication renews it and must keep mechanism and principal, librdkafka re-authenticates
by itself, and a rotated secret stops working on a long-lived librdkafka connection."""

from __future__ import annotations

import re
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from brokerd.protocol import ApiKey as Api
from brokerd.protocol import ErrorCode
from tests.integration.brokerd.broker_process import WireClient
from tests.integration.brokerd.tenancy_fixtures import (
    ApiKey,
    SecureBroker,
    add_api_key,
    confluent_auth,
    grant_tenant_admin,
    login,
    set_tenant,
    start_secure_broker,
    wait_for,
)

pytestmark = pytest.mark.integration

LIFETIME_MS = 2500


@pytest.fixture
def secure(zk_connect: str, zk: KazooClient, tmp_path: Path) -> Iterator[SecureBroker]:
    broker = start_secure_broker(zk_connect, tmp_path,
                                 **{"connections.max.reauth.ms": str(LIFETIME_MS)})
    yield broker
    broker.stop()


def _plain(client: WireClient, api_key: ApiKey, version: int = 2,
           mechanism: str = "PLAIN") -> dict:
    handshake = client.request(Api.SASL_HANDSHAKE, 1, {"mechanism": mechanism})
    assert handshake["error_code"] == 0, handshake
    token = b"\0" + api_key.key.encode() + b"\0" + api_key.secret.encode()
    return client.request(Api.SASL_AUTHENTICATE, version, {"auth_bytes": token})


def _closed(sock: socket.socket, timeout: float = 5.0) -> bool:
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except (ConnectionError, TimeoutError):
        return True


def _metadata_ok(client: WireClient) -> bool:
    return "topics" in client.request(Api.METADATA, 9, {"topics": None})


def _tenant_key(zk: KazooClient, tenant: str = "acme", name: str = "app") -> ApiKey:
    set_tenant(zk, tenant)
    key = add_api_key(zk, tenant, name)
    grant_tenant_admin(zk, key, tenant)
    return key


def test_lifetime_is_advertised_and_an_expired_session_is_closed(
        secure: SecureBroker, zk: KazooClient) -> None:
    key = _tenant_key(zk)
    login(secure.sasl_port, key).close()  # the broker has the key
    client = WireClient(secure.sasl_port)
    answer = _plain(client, key)
    assert answer["error_code"] == 0 and answer["session_lifetime_ms"] == LIFETIME_MS
    assert _metadata_ok(client)
    time.sleep(LIFETIME_MS / 1000 + 0.3)
    client.send(Api.METADATA, 9, {"topics": None})
    assert _closed(client.sock)
    assert "after the SASL session expired" in secure.process.output()


def test_reauthentication_renews_the_session(secure: SecureBroker, zk: KazooClient) -> None:
    key = _tenant_key(zk)
    client = login(secure.sasl_port, key)
    for _ in range(3):  # well past the first session's expiry
        time.sleep(LIFETIME_MS / 1000 * 0.6)
        answer = _plain(client, key)
        assert answer["error_code"] == 0 and answer["session_lifetime_ms"] == LIFETIME_MS
        assert _metadata_ok(client)


def test_reauthentication_may_change_neither_principal_nor_mechanism(
        secure: SecureBroker, zk: KazooClient) -> None:
    key = _tenant_key(zk)
    other = _tenant_key(zk, "globex", "billing")
    login(secure.sasl_port, other).close()
    client = login(secure.sasl_port, key)
    answer = _plain(client, other)
    assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "Cannot change principals" in answer["error_message"]
    assert _closed(client.sock)

    client = login(secure.sasl_port, key)
    handshake = client.request(Api.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"})
    assert handshake["error_code"] == 0  # Kafka refuses at the first token
    answer = client.request(Api.SASL_AUTHENTICATE, 2, {"auth_bytes": b"n,,n=x,r=abc"})
    assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "re-authentication of mechanism 'PLAIN'" in answer["error_message"]
    assert _closed(client.sock)


def test_a_saslauthenticate_v0_client_cannot_reauthenticate(
        secure: SecureBroker, zk: KazooClient) -> None:
    key = _tenant_key(zk)
    login(secure.sasl_port, key).close()
    client = WireClient(secure.sasl_port)
    assert _plain(client, key, version=0)["error_code"] == 0
    handshake = client.request(Api.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert handshake["error_code"] == ErrorCode.ILLEGAL_SASL_STATE


def _sasl_requests(secure: SecureBroker) -> float:
    text = urllib.request.urlopen(
        f"http://127.0.0.1:{secure.process.metrics_port}/metrics", timeout=5).read().decode()
    match = re.search(r'kafka_network_request_seconds_count\{api="sasl_authenticate"\} (\S+)',
                      text)
    return float(match.group(1)) if match else 0.0


def test_librdkafka_reauthenticates_and_a_rotated_secret_stops_working(
        secure: SecureBroker, zk: KazooClient) -> None:
    from confluent_kafka import KafkaError, Producer

    key = _tenant_key(zk)
    login(secure.sasl_port, key).close()
    errors: list[KafkaError] = []
    producer = Producer({**confluent_auth(secure, key), "linger.ms": 0,
                         "error_cb": errors.append})
    delivered: list[object] = []

    def produce_for(seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            producer.produce("events", b"x", on_delivery=lambda err, msg: delivered.append(err))
            producer.poll(0.2)

    produce_for(0.5)
    assert producer.flush(15) == 0
    before = _sasl_requests(secure)
    produce_for(LIFETIME_MS / 1000 * 2.5)  # several lifetimes on the same connections
    assert producer.flush(15) == 0
    assert delivered and all(err is None for err in delivered)
    assert _sasl_requests(secure) > before  # librdkafka re-authenticated by itself
    assert "after the SASL session expired" not in secure.process.output()

    add_api_key(zk, "acme", "app", key=key.key)  # rotate: same key, same principal, new secret
    wait_for(lambda: "failed SASL login" in secure.process.output() and key.key in
             secure.process.output(), timeout=LIFETIME_MS / 1000 * 3)

    def authentication_error_reported() -> bool:
        producer.poll(0.1)  # serves error_cb
        return any(error.code() == KafkaError._AUTHENTICATION for error in errors)

    wait_for(authentication_error_reported, timeout=10)
    producer.purge()
    producer.flush(1)


def test_a_listener_and_mechanism_override_the_broker_wide_lifetime(
        zk_connect: str, zk: KazooClient, tmp_path: Path) -> None:
    broker = start_secure_broker(zk_connect, tmp_path, **{
        "connections.max.reauth.ms": "0",
        "listener.name.sasl_plaintext.plain.connections.max.reauth.ms": "7000"})
    try:
        key = _tenant_key(zk)
        login(broker.sasl_port, key).close()
        client = WireClient(broker.sasl_port)
        assert _plain(client, key)["session_lifetime_ms"] == 7000
        client.close()
    finally:
        broker.stop()
