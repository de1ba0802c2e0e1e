"""A reassignment end to end with real brokers: REST API -> Celery -> ``/admin/reassign_partitions``
-> brokerd's controller moves the partition -> the tracking task reports it complete.

Three ``brokerd serve`` processes on this test's ZooKeeper chroot; a tenant topic (RF 2) is
written by an idempotent acks=all producer the whole time (the load) while it is moved onto
the broker that held no replica (with a throttle); a preferred-leader election then makes the
new replica lead, and every acknowledged record is read back from it, once, in order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tenants import tasks
from tenants.models import Reassignment
from tests.integration.brokerd.broker_process import BrokerProcess
from tests.integration.cluster.sequence import SequenceProducer, assert_no_loss, read_all

from .conftest import running_brokers, wait_for

pytestmark = pytest.mark.integration

TOPIC, RECORDS = "acme.orders", 200


@pytest.fixture
def brokers(publishing: str, tmp_path: Path, settings) -> Iterator[list[BrokerProcess]]:  # type: ignore[no-untyped-def]
    with running_brokers(publishing, tmp_path, settings, {1: None, 2: None, 3: None}) as started:
        yield [broker for broker, _ in started]


def _json(zk, path):  # type: ignore[no-untyped-def]
    return json.loads(zk.get(path)[0]) if zk.exists(path) else None


def _leaders_reported(brokers: list[BrokerProcess]) -> dict[int, int]:
    """Each broker's answer to Metadata: who leads partition 0 (for failure messages)."""
    return {b.broker_id: AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(TOPIC, timeout=5)
            .topics[TOPIC].partitions[0].leader for b in brokers}


def test_a_partition_moves_to_another_broker_without_loss_and_is_reported_complete(
        brokers, zk, make_tenant, operator_api) -> None:  # type: ignore[no-untyped-def]
    bootstrap = ",".join(b.bootstrap for b in brokers)
    wait_for(lambda: len(zk.get_children("/brokers/ids")) == 3 if zk.exists("/brokers/ids") else False)
    make_tenant("acme")
    wait_for(lambda: zk.exists("/tenants/acme"))
    assert operator_api.post("/api/v1/tenants/acme/topics/",
                             {"name": "orders", "partitions": 1, "replication_factor": 2},
                             format="json").status_code == 201
    original = wait_for(lambda: _json(zk, f"/brokers/topics/{TOPIC}"))["partitions"]["0"]
    wait_for(lambda: _json(zk, f"/brokers/topics/{TOPIC}/partitions/0/state"))

    with SequenceProducer(bootstrap, TOPIC, 1, rate_per_s=200) as producer:
        wait_for(lambda: producer.acked_count() >= RECORDS)  # and it keeps producing: the load

        spare = next(b for b in (1, 2, 3) if b not in original)
        target = [spare, original[0]]
        created = operator_api.post("/api/v1/reassignments/", {"topic": TOPIC, "partition": 0,
                                                               "replicas": target, "throttle": 10_000_000},
                                    format="json")
        assert created.status_code == 201, created.content

        def completed() -> bool:
            tasks.track_reassignments.delay()  # what Celery beat does every few seconds
            return Reassignment.objects.get().state == Reassignment.COMPLETE

        wait_for(completed, timeout=60)
        assert _json(zk, f"/brokers/topics/{TOPIC}")["partitions"]["0"] == target
        state = _json(zk, f"/brokers/topics/{TOPIC}/partitions/0/state")
        assert state["leader"] in target and sorted(state["isr"]) == sorted(target)  # as in Kafka, a
        # leader that is part of the target keeps leading; a preferred election would move it
        wait_for(lambda: not zk.exists("/config/brokers/<default>"))
        assert not zk.exists("/admin/reassign_partitions")

        # leadership to the new replica, then read everything from it
        assert operator_api.post("/api/v1/preferred-leader-elections/",
                                 {"partitions": [{"topic": TOPIC, "partition": 0}]},
                                 format="json").status_code == 202
        wait_for(lambda: _json(zk, f"/brokers/topics/{TOPIC}/partitions/0/state")["leader"] == spare,
                 timeout=30)
        acked = producer.acked_count()
        wait_for(lambda: producer.acked_count() >= acked + RECORDS)  # now written to the new leader

    try:
        stored = read_all(bootstrap, TOPIC, 1)
    except AssertionError as exc:
        raise AssertionError(
            f"{exc}; ZooKeeper: {_json(zk, f'/brokers/topics/{TOPIC}/partitions/0/state')}, "
            f"brokers' metadata: {_leaders_reported(brokers)}") from None
    assert_no_loss(producer, stored)
    assert not producer.errors, producer.errors[:5]
