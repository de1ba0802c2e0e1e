"""SCRAM admin APIs (KIP-554) through confluent-kafka's AdminClient against a real broker:
operators create, describe, rotate and delete users whose credentials land in the node and
format the control plane writes (so the user logs in at once); Kafka's per-user errors;
tenants are refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kazoo.client import KazooClient

from brokerd.protocol import ApiKey as Api
from brokerd.protocol import ErrorCode
from tenants.credentials import scram_credential
from tests.integration.brokerd.tenancy_fixtures import (
    SecureBroker,
    add_api_key,
    grant,
    login,
    set_tenant,
    start_secure_broker,
    wait_for,
)
from tests.support.confluent_admin import all_scram_descriptions, scram_descriptions

pytestmark = pytest.mark.integration
SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


@pytest.fixture
def secure(zk_connect: str, tmp_path: Path) -> Iterator[SecureBroker]:
    broker = start_secure_broker(zk_connect, tmp_path)
    yield broker
    broker.stop()


def results(futures: dict) -> dict:
    """user -> None on success, or the KafkaError code."""
    found = {}
    for user, future in futures.items():
        try:
            found[user] = future.result(15)
        except KafkaException as exc:
            found[user] = exc.args[0].code()
    return found


def can_log_in(broker: SecureBroker, user: str, password: str, mechanism: str) -> bool:
    client = AdminClient({"bootstrap.servers": broker.sasl_bootstrap,
                          "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": mechanism,
                          "sasl.username": user, "sasl.password": password})
    try:
        return bool(client.list_topics(timeout=5).brokers)
    except KafkaException:
        return False


def test_operators_manage_scram_users(secure: SecureBroker, zk: KazooClient) -> None:
    admin = AdminClient({"bootstrap.servers": secure.process.bootstrap})
    salt = b"0123456789abcdef"
    assert results(admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("ops", ScramCredentialInfo(SHA256, 4096), b"first", salt),
        UserScramCredentialUpsertion("ops", ScramCredentialInfo(SHA512, 8192), b"first", salt),
    ])) == {"ops": None}
    config = json.loads(zk.get("/config/users/ops")[0])["config"]
    assert config == {"SCRAM-SHA-256": scram_credential("first", "SCRAM-SHA-256", salt=salt),
                      "SCRAM-SHA-512": scram_credential("first", "SCRAM-SHA-512", salt=salt,
                                                        iterations=8192)}
    assert any(json.loads(zk.get(f"/config/changes/{c}")[0]) == {
        "version": 2, "entity_path": "users/ops"} for c in zk.get_children("/config/changes"))
    assert can_log_in(secure, "ops", "first", "SCRAM-SHA-256")
    assert can_log_in(secure, "ops", "first", "SCRAM-SHA-512")

    described = scram_descriptions(admin, ["ops"])["ops"].result(15)
    assert sorted((i.mechanism, i.iterations) for i in described.scram_credential_infos) == [
        (SHA256, 4096), (SHA512, 8192)]
    set_tenant(zk, "acme")
    api_key = add_api_key(zk, "acme", "app")  # the control plane's users are SCRAM users too
    everyone = wait_for(lambda: (lambda found: found if api_key.key in found else None)(
        all_scram_descriptions(admin).result(15)))
    assert set(everyone) == {"ops", api_key.key}

    # rotation: the old password stops working, the new one works at once
    results(admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "ops", ScramCredentialInfo(SHA512, 4096), b"second")]))
    assert can_log_in(secure, "ops", "second", "SCRAM-SHA-512")
    assert not can_log_in(secure, "ops", "first", "SCRAM-SHA-512")

    assert results(admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("weak", ScramCredentialInfo(SHA256, 100), b"pw"),
        UserScramCredentialDeletion("nobody", SHA256),
        UserScramCredentialDeletion(api_key.key, SHA256),
        UserScramCredentialDeletion("ops", SHA256),
        UserScramCredentialUpsertion("acme.app", ScramCredentialInfo(SHA256, 4096), b"pw"),
    ])) == {"weak": KafkaError.UNACCEPTABLE_CREDENTIAL, "nobody": KafkaError.RESOURCE_NOT_FOUND,
            api_key.key: KafkaError.INVALID_REQUEST, "ops": None,
            "acme.app": KafkaError.INVALID_REQUEST}  # a tenant's principal name
    assert not zk.exists("/config/users/acme.app")
    assert "SCRAM-SHA-256" in json.loads(zk.get(f"/config/users/{api_key.key}")[0])["config"]
    assert set(json.loads(zk.get("/config/users/ops")[0])["config"]) == {"SCRAM-SHA-512"}
    assert not zk.exists("/config/users/weak")
    with pytest.raises(KafkaException) as missing:
        scram_descriptions(admin, ["nobody"])["nobody"].result(15)
    assert missing.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND


def test_tenants_are_refused(secure: SecureBroker, zk: KazooClient) -> None:
    set_tenant(zk, "acme", acl_admin=True)
    key = add_api_key(zk, "acme", "admin")
    grant(zk, key.principal, "Cluster", "kafka-cluster", ("All",), pattern="literal")
    client = login(secure.sasl_port, key)
    described = client.request(Api.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None})
    assert described["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert described["results"] == []
    altered = client.request(Api.ALTER_USER_SCRAM_CREDENTIALS, 0, {"deletions": [], "upsertions": [
        {"name": "sneaky", "mechanism": 2, "iterations": 4096, "salt": b"s" * 16,
         "salted_password": b"p" * 64}]})
    assert altered["results"] == [{"user": "sneaky", "error_code": int(
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED), "error_message": altered["results"][0][
        "error_message"]}]
    assert not zk.exists("/config/users/sneaky")
