"""Topic sizes read from the brokers' ``kafka_log_size_bytes``, on the tenant's topics page."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Producer
from django.test import Client

from dashboard.topic_sizes import TopicSizes, parse_log_sizes
from tenants import services, tasks
from tenants.models import Tenant

from .conftest import KafkaBroker

METRICS = """\
# HELP kafka_log_size_bytes Bytes on disk per partition log
# TYPE kafka_log_size_bytes gauge
kafka_log_size_bytes{topic="acme.orders",partition="0"} 1234.0
kafka_log_size_bytes{topic="acme.orders",partition="1"} 66.0
kafka_log_size_bytes{topic="globex.orders",partition="0"} 0.0
# TYPE kafka_server_bytes_in_total counter
kafka_server_bytes_in_total{topic="acme.orders"} 999.0
"""


def test_parse_log_sizes_and_sum_complete_topics() -> None:
    parsed = parse_log_sizes(METRICS)
    assert parsed == {("acme.orders", 0): 1234, ("acme.orders", 1): 66, ("globex.orders", 0): 0}

    sizes = TopicSizes()
    sizes.merge(parsed)
    sizes.merge({("acme.orders", 1): 40, ("acme.logs", 0): 10})  # a shorter replica's copy
    assert sizes.totals() == {"acme.orders": 1300, "globex.orders": 0, "acme.logs": 10}
    assert sizes.size("acme.orders", 2) == 1300
    assert sizes.size("acme.orders", 3) is None  # partition 2 was not seen: no partial total
    assert sizes.size("acme.missing", 1) is None


@pytest.mark.django_db
def test_a_broker_that_does_not_answer_leaves_the_page_rendering(  # type: ignore[no-untyped-def]
        acme: Tenant, admin_client_for: Callable[[Tenant], Client], zk, zk_connect: str,
        settings) -> None:
    from tenants.zookeeper import close_all

    settings.ZOOKEEPER_CONNECT = zk_connect
    services.create_topic(None, acme, name="orders", partitions=1)
    # a registration whose metrics port nothing listens on (port 1 is privileged and unused)
    zk.create("/brokers/ids/7", b'{"host":"127.0.0.1","port":9092,"metrics_port":1}',
              makepath=True)
    try:
        page = admin_client_for(acme).get("/t/acme/topics/").content.decode()
    finally:
        close_all()
    row = page.split('data-topic="orders"')[1].split("</tr>")[0]
    assert '<td class="size">–</td>' in row
    assert "Brokers not answering: 7" in page


@pytest.mark.integration
@pytest.mark.django_db
def test_the_topics_page_shows_the_bytes_produced(  # type: ignore[no-untyped-def]
        kafka_broker: KafkaBroker, acme: Tenant,
        admin_client_for: Callable[[Tenant], Client]) -> None:
    topic = services.create_topic(None, acme, name="events", partitions=2)
    tasks.publish_topic(topic.physical_name)  # what the on-commit task does, run inline
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 5})
    for i in range(200):
        producer.produce("acme.events", b"x" * 1000, partition=i % 2)
    assert producer.flush(15) == 0

    client = admin_client_for(acme)
    deadline = time.monotonic() + 10  # the log size is read at scrape time; allow for flushes
    while True:
        page = client.get("/t/acme/topics/").content.decode()
        cell = page.split('data-topic="events"')[1].split('<td class="size">')[1].split("<")[0]
        if cell != "–" or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert "Brokers not answering" not in page and "Sizes unavailable" not in page
    # 200 records of 1000 bytes, plus batch and record headers: between 195 KiB and 1 MiB
    assert cell.endswith("KB"), cell
    assert 195 <= float(cell.split("\xa0")[0]) < 1024, cell
