"""Quota usage as the brokers measure it, on the tenant quota page and the operators' page."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from django.test import Client

from dashboard.broker_metrics import metrics_urls
from dashboard.quota_usage import ClusterUsage, EntityUsage, parse_metrics, scrape
from tenants import znodes
from tenants.zookeeper import client, put_config

from .conftest import KafkaBroker

METRICS = """\
# TYPE kafka_quota_rate gauge
kafka_quota_rate{quota_type="produce",tenant="acme",user="acme.app",client_id=""} 1048000.0
kafka_quota_rate{quota_type="fetch",tenant="acme",user="acme.app",client_id="c1"} 10.0
# TYPE kafka_quota_limit gauge
kafka_quota_limit{quota_type="produce",tenant="acme",user="acme.app",client_id="",\
source="users/acme.app"} 1048576.0
# TYPE kafka_quota_throttled counter
kafka_quota_throttled_total{quota_type="produce",tenant="acme",user="acme.app",client_id=""} 7.0
# TYPE kafka_quota_throttle_time_ms counter
kafka_quota_throttle_time_ms_total{quota_type="produce",tenant="acme",user="acme.app",client_id=""} 900.0
"""


def test_parse_metrics_and_pick_the_busiest_broker() -> None:
    entities = parse_metrics(2, METRICS)
    produce = next(e for e in entities if e.quota_type == "produce")
    assert (produce.rate, produce.limit, produce.source) == (1048000.0, 1048576.0, "users/acme.app")
    assert (produce.throttled_total, produce.throttle_time_ms_total) == (7.0, 900.0)
    quieter = EntityUsage(1, "produce", "acme", "acme.app", "", rate=5.0)
    usage = ClusterUsage(entities=[quieter, *entities])
    assert usage.peak("produce", "acme.app", "any-client") is produce  # shared by all client ids
    assert usage.peak("fetch", "acme.app", "c2") is None  # that quota is c1's alone
    assert usage.throttled() == [produce]


def test_metrics_urls_from_registrations() -> None:
    assert metrics_urls({
        1: b'{"host":"h1","port":9092,"metrics_port":9101}',
        2: b'{"host":null,"port":-1,"endpoints":["SASL_SSL://h2:9292"],"metrics_port":9102}',
        3: b'{"host":"h3","port":9094,"metrics_port":-1}',
    }) == {1: "http://h1:9101/metrics", 2: "http://h2:9102/metrics"}


@pytest.mark.integration
def test_a_throttled_client_shows_on_the_operator_page(kafka_broker: KafkaBroker,  # type: ignore[no-untyped-def]
                                                       operator_client: Client, zk_connect) -> None:
    zk = client(zk_connect)
    put_config(zk, znodes.entity_path(None, "slow-app"), {"producer_byte_rate": "20480"})
    time.sleep(1)  # brokers apply a quota change within a second
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "client.id": "slow-app",
                         "linger.ms": 5})
    for _ in range(300):
        producer.produce("quota-usage", b"x" * 1024)
    assert producer.flush(30) == 0

    deadline = time.monotonic() + 5  # brokers refresh their quota metrics every second
    while not (usage := scrape(zk)).throttled() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert usage.unreachable == []
    throttled = usage.throttled()
    assert [(e.broker_id, e.quota_type, e.client_id) for e in throttled] == [(1, "produce", "slow-app")]
    assert throttled[0].limit == 20480.0 and throttled[0].rate > 0

    page = operator_client.get("/ops/brokers/").content.decode()
    assert "slow-app" in page and "No client has been throttled" not in page
