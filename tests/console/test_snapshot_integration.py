"""The lag snapshot and the offset reset against a real broker and a real consumer group."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from dashboard import services, snapshots
from dashboard.models import ConsumerGroupLag, TopicThroughput
from dashboard.offsets import ResetRequest
from tenants.models import Tenant

from .kafka_helpers import client_config, consume, create_topic, group_consumer, produce

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_snapshot_and_reset_of_a_real_group(kafka_broker, acme: Tenant, globex: Tenant) -> None:  # type: ignore[no-untyped-def]
    bootstrap = kafka_broker.bootstrap
    create_topic(bootstrap, "acme.orders", 2)
    produce(client_config(bootstrap), "acme.orders", 100, 2)
    consumer = group_consumer(client_config(bootstrap), "acme.billing", "acme.orders")
    try:
        assert consume(consumer, 60) == 60
        snapshots.snapshot_all()
        row = ConsumerGroupLag.objects.get(tenant=acme, group="billing")
        assert row.state == "STABLE" and len(row.members) == 1
        assert row.members[0]["client_id"] == "console-test"
        assert sorted(map(tuple, row.members[0]["assignment"])) == [("orders", 0), ("orders", 1)]
        assert row.total_lag == 40
        partitions = row.lag["partitions"]
        assert [(p["topic"], p["log_start"], p["high_watermark"]) for p in partitions] == [
            ("orders", 0, 50), ("orders", 0, 50)]
        assert sum(p["committed"] for p in partitions) == 60
        assert TopicThroughput.objects.get(tenant=acme, topic="orders").records == 100
        assert not ConsumerGroupLag.objects.filter(tenant=globex).exists()

        with pytest.raises(ValidationError, match="member"):
            services.preview_reset(acme, "billing", ResetRequest("earliest", "orders"))
    finally:
        consumer.close()

    snapshots.snapshot_all()
    row = ConsumerGroupLag.objects.get(tenant=acme, group="billing")
    assert row.state == "EMPTY" and row.members == []
    preview = services.preview_reset(acme, "billing", ResetRequest("earliest", "orders"))
    assert [(p.partition, p.target, p.lag_after) for p in preview] == [(0, 0, 50), (1, 0, 50)]
    services.reset_offsets(None, acme, "billing", ResetRequest("offset", "orders", partition=1,
                                                                offset=45))
    snapshots.snapshot_all()
    row = ConsumerGroupLag.objects.get(tenant=acme, group="billing")
    assert [p["committed"] for p in row.lag["partitions"]][1] == 45
    assert row.total_lag == (50 - row.lag["partitions"][0]["committed"]) + 5


def test_snapshot_and_reset_of_a_consumer_protocol_group(kafka_broker, acme: Tenant) -> None:  # type: ignore[no-untyped-def]
    """A KIP-848 group (confluent-kafka, ``group.protocol=consumer``): the snapshot stores its
    type, epochs, members with their epochs and assignments, and lag from OffsetFetch; once
    its consumers left, its offsets reset like a classic group's."""
    from confluent_kafka import Consumer

    bootstrap = kafka_broker.bootstrap
    create_topic(bootstrap, "acme.orders", 2)
    produce(client_config(bootstrap), "acme.orders", 100, 2)
    consumer = Consumer({**client_config(bootstrap), "group.id": "acme.kip",
                         "group.protocol": "consumer", "client.id": "kip-1",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["acme.orders"])
    try:
        assert consume(consumer, 60) == 60
        snapshots.snapshot_all()
        row = ConsumerGroupLag.objects.get(tenant=acme, group="kip")
        assert (row.group_type, row.state, row.assignor) == ("consumer", "STABLE", "uniform")
        assert row.group_epoch is not None and row.group_epoch >= 1
        assert row.group_epoch == row.assignment_epoch
        (member,) = row.members
        assert (member["client_id"], member["member_epoch"]) == ("kip-1", row.assignment_epoch)
        assert member["assignment"] == member["target_assignment"] == [["orders", 0], ["orders", 1]]
        assert member["subscribed_topics"] == ["orders"] and row.total_lag == 40
        with pytest.raises(ValidationError, match="member"):
            services.preview_reset(acme, "kip", ResetRequest("earliest", "orders"))
    finally:
        consumer.close()

    snapshots.snapshot_all()
    row = ConsumerGroupLag.objects.get(tenant=acme, group="kip")
    assert (row.group_type, row.state, row.members) == ("consumer", "EMPTY", [])
    services.reset_offsets(None, acme, "kip", ResetRequest("earliest", "orders"))
    snapshots.snapshot_all()
    row = ConsumerGroupLag.objects.get(tenant=acme, group="kip")
    assert row.total_lag == 100 and [p["committed"] for p in row.lag["partitions"]] == [0, 0]
