"""Replication over SASL_SSL: followers fetch from leaders over TLS as the SCRAM user of
``listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config``, with real clients on SASL_SSL too.

What would fail if the feature broke: with followers unable to connect or log in, the ISR
never fills (create_topic waits for full ISRs) and acks=all with min.insync.replicas=2 is
refused; a record acknowledged before the leader is killed must be read back from the
survivors, so it was replicated over the TLS listener (the only one followers use)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kazoo.client import KazooClient

from tests.integration.cluster.harness import SESSION_TIMEOUT_MS, wait_until, with_timeout_kill
from tests.integration.cluster.test_durability import assert_replicas_identical
from tests.integration.secure.secure_cluster import (
    BROKER_PASSWORD,
    BROKER_USER,
    SecureCluster,
    secure_properties,
    write_scram_user,
)

FAILOVER_BUDGET_S = SESSION_TIMEOUT_MS / 1000 + 15


def client_config(cluster: SecureCluster, certs: Path) -> dict[str, object]:
    return {"bootstrap.servers": cluster.secure_bootstrap, "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(certs / "ca.pem"), "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": BROKER_USER, "sasl.password": BROKER_PASSWORD}


@pytest.fixture
def secure_cluster(zk_connect: str, zk: KazooClient, tmp_path: Path,
                   certs: Path) -> Iterator[SecureCluster]:
    write_scram_user(zk, BROKER_USER, BROKER_PASSWORD)
    cluster = SecureCluster(zk_connect, tmp_path, properties=secure_properties(certs))
    try:
        yield cluster.start()
    finally:
        for process in cluster.brokers.values():
            if process.process is not None and process.process.poll() is None:
                with_timeout_kill(process)


def produce_all(config: dict[str, object], topic: str, values: list[bytes]) -> list[int]:
    """Produce with acks=all (idempotent); the offsets of every delivery, failing on errors."""
    producer = Producer({**config, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 60_000})
    offsets: list[int] = []
    errors: list[str] = []

    def delivered(error: KafkaError | None, message: object) -> None:
        if error is not None:
            errors.append(str(error))
        else:
            offsets.append(message.offset())  # type: ignore[attr-defined]

    for value in values:
        producer.produce(topic, value, partition=0, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(90) == 0
    assert not errors, errors[:5]
    return offsets


def consume_all(config: dict[str, object], topic: str, count: int) -> list[bytes]:
    consumer = Consumer({**config, "group.id": f"read-{topic}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": True})
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        wait_until(lambda: _poll_into(consumer, values) >= count, 90,
                   f"{count} records of {topic} over SASL_SSL", interval_s=0)
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition(topic, 0)], timeout=30)
        assert committed[0].offset == count
    finally:
        consumer.close()
    return values


def _poll_into(consumer: Consumer, values: list[bytes]) -> int:
    message = consumer.poll(0.5)
    if message is not None and message.error() is None:
        value = message.value()
        assert value is not None, "every record produced here has a value"
        values.append(value)
    return len(values)


def test_followers_replicate_over_sasl_ssl_and_survive_leader_loss(
        secure_cluster: SecureCluster, certs: Path) -> None:
    topic = "secure-orders"
    secure_cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "2"})  # waits: full ISR
    config = client_config(secure_cluster, certs)
    first = [b"before-%d" % n for n in range(2_000)]
    assert sorted(produce_all(config, topic, first)) == list(range(2_000))
    secure_cluster.await_full_isr(topic)

    old_leader = secure_cluster.leader(topic)
    secure_cluster.kill(old_leader)
    wait_until(lambda: secure_cluster.view(topic).leader not in (old_leader, -1),
               FAILOVER_BUDGET_S, "a follower to take over")
    second = [b"after-%d" % n for n in range(1_000)]
    produce_all(config, topic, second)  # acks=all needs the other follower, over SASL_SSL
    secure_cluster.restart(old_leader)
    secure_cluster.await_full_isr(topic, timeout_s=60)

    assert consume_all(config, topic, 3_000) == first + second
    assert_replicas_identical(secure_cluster, topic, 1)


def test_a_follower_with_a_wrong_inter_broker_password_cannot_replicate(
        zk_connect: str, zk: KazooClient, tmp_path: Path, certs: Path) -> None:
    write_scram_user(zk, BROKER_USER, BROKER_PASSWORD)
    cluster = SecureCluster(zk_connect, tmp_path, properties=secure_properties(certs),
                            overrides={3: secure_properties(certs, password="wrong")})
    try:
        cluster.start()
        topic = "guarded-secure"
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(topic, 1, replica_assignment=[[1, 2, 3]])],
                            operation_timeout=30)[topic].result(timeout=60)
        wait_until(lambda: "inter-broker login as 'broker' failed" in cluster.brokers[3].output(),
                   30, "broker 3's refused inter-broker login to be logged")
        wait_until(lambda: cluster.view(topic).isr == (1, 2), 30,
                   "broker 3, which cannot log in to its leader, to leave the ISR")
        assert "inter-broker login" not in cluster.brokers[2].output()  # the right password
    finally:
        cluster.stop_all()


def test_followers_replicate_over_ssl_presenting_their_certificates(
        zk_connect: str, tmp_path: Path, certs: Path) -> None:
    """inter.broker.listener.name=SSL with ssl.client.auth=required: each follower proves
    itself with the broker certificate (principal ``User:CN=localhost`` by the DEFAULT rule,
    a super user), and acks=all needs what it replicated."""
    props = {**secure_properties(certs, "SSL"), "ssl.client.auth": "required",
             "super.users": "User:ANONYMOUS;User:CN=localhost"}
    cluster = SecureCluster(zk_connect, tmp_path, properties=props, listener="SSL")
    try:
        cluster.start()
        topic = "ssl-replicated"
        cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "3"})  # waits: full ISR
        values = [b"v-%d" % n for n in range(1_000)]
        assert sorted(produce_all({"bootstrap.servers": cluster.bootstrap}, topic, values)) == \
            list(range(1_000))
        assert consume_all({"bootstrap.servers": cluster.bootstrap}, topic, 1_000) == values
        assert_replicas_identical(cluster, topic, 1)
    finally:
        cluster.stop_all()


def test_a_follower_without_cluster_action_cannot_replicate(
        zk_connect: str, tmp_path: Path, certs: Path) -> None:
    """The same SSL cluster, but the brokers' certificate principal is no super user and has
    no CLUSTER_ACTION: the leader refuses its followers' fetches and they leave the ISR."""
    props = {**secure_properties(certs, "SSL"), "ssl.client.auth": "required",
             "super.users": "User:ANONYMOUS"}
    cluster = SecureCluster(zk_connect, tmp_path, properties=props, listener="SSL")
    try:
        cluster.start()
        topic = "ssl-refused"
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(topic, 1, replica_assignment=[[1, 2, 3]])],
                            operation_timeout=30)[topic].result(timeout=60)
        wait_until(lambda: cluster.view(topic).isr == (1,), 30,
                   "followers refused CLUSTER_ACTION to leave the ISR")
        for follower in (2, 3):  # CLUSTER_AUTHORIZATION_FAILED, retried with a back-off
            output = cluster.brokers[follower].output()
            assert "leader 1 refused replica fetches (error 31)" in output
            assert output.count("refused replica fetches") < 100, "the fetcher spins"
    finally:
        cluster.stop_all()


def test_followers_re_authenticate_before_their_sasl_session_expires(
        zk_connect: str, zk: KazooClient, tmp_path: Path, certs: Path) -> None:
    """KIP-368 on the inter-broker connection: with connections.max.reauth.ms=1500 the
    leader would close a follower's connection at its first request after expiry; the
    follower logs in again on the same connection first, so no connection is ever dropped."""
    write_scram_user(zk, BROKER_USER, BROKER_PASSWORD)
    cluster = SecureCluster(zk_connect, tmp_path, properties={
        **secure_properties(certs), "connections.max.reauth.ms": "1500"})
    try:
        cluster.start()
        topic = "reauthenticated"
        cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "3"})
        config = client_config(cluster, certs)
        for round_number in range(4):  # spans several session lifetimes
            values = [b"%d-%d" % (round_number, n) for n in range(200)]
            produce_all(config, topic, values)
            time.sleep(1)
        assert set(cluster.view(topic).isr) == {1, 2, 3}
        for broker_id in cluster.brokers:
            output = cluster.brokers[broker_id].output()
            assert "without re-authentication" not in output, output[-2000:]
            assert "replica fetcher for broker" not in output  # never reconnected
    finally:
        cluster.stop_all()


def test_followers_replicate_over_sasl_plaintext_with_plain(
        zk_connect: str, zk: KazooClient, tmp_path: Path, certs: Path) -> None:
    """The other SASL combination: no TLS, the PLAIN mechanism, and the broker-wide
    ``sasl.jaas.config`` instead of a per-listener line."""
    write_scram_user(zk, BROKER_USER, BROKER_PASSWORD)  # PLAIN checks the SCRAM credential
    props = {"inter.broker.listener.name": "SASL_PLAINTEXT",
             "sasl.mechanism.inter.broker.protocol": "PLAIN",
             "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
                                 f'required username="{BROKER_USER}" password="{BROKER_PASSWORD}";',
             "super.users": f"User:ANONYMOUS;User:{BROKER_USER}"}
    cluster = SecureCluster(zk_connect, tmp_path, properties=props, listener="SASL_PLAINTEXT")
    try:
        cluster.start()
        topic = "plain-replicated"
        cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "3"})
        values = [b"p-%d" % n for n in range(500)]
        produce_all({"bootstrap.servers": cluster.bootstrap}, topic, values)
        assert_replicas_identical(cluster, topic, 1)
    finally:
        cluster.stop_all()


def test_transaction_markers_reach_other_leaders_over_sasl_ssl(
        secure_cluster: SecureCluster, certs: Path) -> None:
    """The coordinator writes commit markers to partitions other brokers lead over the same
    inter-broker link (TLS + SCRAM); a read_committed consumer then sees every record."""
    topic = "secure-txn"
    secure_cluster.create_topic(topic, 3, 3)
    config = client_config(secure_cluster, certs)
    producer = Producer({**config, "transactional.id": "secure-txn-1"})
    producer.init_transactions(60)
    producer.begin_transaction()
    for n in range(30):
        producer.produce(topic, b"t-%d" % n, partition=n % 3)
    producer.commit_transaction(60)
    consumer = Consumer({**config, "group.id": "secure-txn-readers", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        wait_until(lambda: _poll_into(consumer, values) >= 30, 90, "the committed records",
                   interval_s=0)
    finally:
        consumer.close()
    assert sorted(values) == sorted(b"t-%d" % n for n in range(30))
