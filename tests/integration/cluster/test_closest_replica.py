"""Fetch from the closest replica (KIP-392) on three real brokers in three racks: a
confluent-kafka consumer with ``client.rack`` is pointed by the leader at the in-sync
follower of its rack and reads everything from it; a consumer in the leader's rack (or with
no rack) stays on the leader; a tenant's bytes served by the follower are metered by it,
with both racks (issue 15, item 8)."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from tests.integration.brokerd.broker_process import BrokerProcess
from tests.integration.brokerd.tenancy_fixtures import add_api_key, grant_tenant_admin, set_tenant
from tests.integration.cluster.harness import CLUSTER_PROPERTIES, wait_until
from tests.support.services import free_port

pytestmark = pytest.mark.integration

RECORDS = 300


@pytest.fixture
def racks(zk_connect: str, tmp_path: Path) -> Iterator[dict[int, BrokerProcess]]:
    brokers: dict[int, BrokerProcess] = {}
    try:
        for broker_id in (1, 2, 3):
            brokers[broker_id] = BrokerProcess(
                zk_connect, tmp_path / f"logs-{broker_id}", broker_id, properties={
                    **CLUSTER_PROPERTIES, "broker.rack": f"az-{broker_id}",
                    "replica.selector.class": "RackAwareReplicaSelector",
                    "metering.flush.interval.ms": "300"},
                extra_listeners=(f"SASL_PLAINTEXT://127.0.0.1:{free_port()}",)).start()
        yield brokers
    finally:
        for broker in brokers.values():
            try:
                broker.stop(timeout=15)
            except Exception:
                broker.kill()


def _bytes_out(broker: BrokerProcess, topic: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/metrics",
                                  timeout=5).read().decode()
    match = re.search(rf'kafka_server_bytes_out_total\{{topic="{topic}"\}} (\S+)', text)
    return float(match.group(1)) if match else 0.0


def _consume_all(bootstrap: str, topic: str, rack: str | None, **auth: str
                 ) -> list[bytes | None]:
    config = {"bootstrap.servers": bootstrap, "group.id": f"g-{rack}",
              "enable.auto.commit": False, "fetch.wait.max.ms": 100, **auth}
    if rack is not None:
        config["client.rack"] = rack
    consumer = Consumer(config)
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes | None] = []
    deadline = time.monotonic() + 60
    try:
        while len(values) < RECORDS and time.monotonic() < deadline:
            for message in consumer.consume(500, 0.5):
                assert message.error() is None, message.error()
                values.append(message.value())
    finally:
        consumer.close()
    return values


def _replicated_topic(bootstrap: str, topic: str) -> list[bytes | None]:
    """``topic`` on brokers 1 (leader), 2, 3 with RECORDS records, all three in the ISR
    (the leader points only at in-sync followers)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[1, 2, 3]])])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(topic, b"v%d" % i)
    assert producer.flush(30) == 0
    wait_until(lambda: sorted(admin.list_topics(topic, timeout=5).topics[topic]
                              .partitions[0].isrs) == [1, 2, 3], 30, "a full ISR")
    return [b"v%d" % i for i in range(RECORDS)]


def test_a_consumer_reads_from_the_in_sync_follower_of_its_rack(
        racks: dict[int, BrokerProcess]) -> None:
    bootstrap = ",".join(b.bootstrap for b in racks.values())
    expected = _replicated_topic(bootstrap, "near")

    assert _consume_all(bootstrap, "near", "az-3") == expected
    served_by_3 = _bytes_out(racks[3], "near")
    assert served_by_3 > 0  # a follower sends bytes only to consumers
    assert _bytes_out(racks[2], "near") == 0

    leader_before = _bytes_out(racks[1], "near")
    assert _consume_all(bootstrap, "near", "az-1") == expected  # the leader's own rack
    assert _consume_all(bootstrap, "near", None) == expected  # no rack: the leader
    assert _bytes_out(racks[1], "near") > leader_before
    assert _bytes_out(racks[3], "near") == served_by_3
    assert _bytes_out(racks[2], "near") == 0


def _usage_records(bootstrap: str) -> Iterator[dict]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "usage-reader",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["__usage"])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for message in consumer.consume(100, 0.5):
                value = message.value() if message.error() is None else None
                if value is not None:
                    yield json.loads(value)
    finally:
        consumer.close()


def test_the_follower_meters_what_it_served_with_both_racks(
        racks: dict[int, BrokerProcess], zk: KazooClient) -> None:
    bootstrap = ",".join(b.bootstrap for b in racks.values())
    set_tenant(zk, "acme")
    key = add_api_key(zk, "acme", "reader")
    grant_tenant_admin(zk, key, "acme")
    expected = _replicated_topic(bootstrap, "acme.near")
    sasl = ",".join(b.extra_listeners[0].split("//")[1] for b in racks.values())
    auth = {"bootstrap.servers": sasl, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": key.key,
            "sasl.password": key.secret}
    assert _consume_all(bootstrap, "near", "az-3", **auth) == expected
    total = _bytes_out(racks[3], "acme.near")
    served = 0
    for record in _usage_records(bootstrap):
        for entry in record["traffic"]:
            if record["tenant"] == "acme" and entry["bytes_out"]:
                assert (record["broker_id"], record.get("broker_rack"),
                        entry.get("client_rack")) == (3, "az-3", "az-3")
                served += entry["bytes_out"]
        if served >= total:
            break
    assert served > 0 and served == total
