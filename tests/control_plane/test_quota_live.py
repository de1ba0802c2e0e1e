"""Issue 7, end to end: raising a tenant principal's quota through the REST API lifts its
rate on every broker within 2 s.

The whole chain is real: REST API -> ``quotas.services.set_quota`` -> Celery task on a real
worker (Redis) -> entity znode + ``/config/changes`` notification in this test's ZooKeeper
chroot -> three ``python -m brokerd serve`` processes, each leading one partition of the
tenant's topic.  The client is confluent-kafka over SASL_PLAINTEXT/SCRAM-SHA-512 with the
API key the REST API handed out.  Quotas are per broker, so each broker is checked on its
own: its ``kafka_quota_limit`` (read from the snapshot the broker takes every second) and
its byte counter for the topic.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from tests.integration.brokerd.broker_process import BrokerProcess
from tests.integration.brokerd.quota_support import PushStats, producer, push, scrape
from tests.integration.brokerd.tenancy_fixtures import WATCH_PROPAGATION_S
from tests.integration.brokerd.test_quotas import ByteSampler

from .conftest import running_brokers, wait_for

pytestmark = pytest.mark.integration

LOW, HIGH = 300_000, 3_000_000
LIFT_DEADLINE_S = 2.0
BEFORE_S = 5.0  # produce this long at LOW before raising the quota
AFTER_S = 4.0  # ... and this long after
PRINCIPAL, KAFKA_USER, TOPIC = "orders", "acme.orders", "acme.orders"


@pytest.fixture
def brokers(publishing: str, tmp_path: Path, settings) -> Iterator[list[tuple[BrokerProcess, int | None]]]:  # type: ignore[no-untyped-def]
    """Three brokers on the test's chroot: (process, SASL_PLAINTEXT port) each."""
    with running_brokers(publishing, tmp_path, settings, {1: None, 2: None, 3: None}, sasl=True) as started:
        yield started


def produce_limits(broker: BrokerProcess) -> dict[str, float]:
    """This broker's produce quota metrics for the principal: {"limit": …, "rate": …}."""
    found = {}
    for (name, labels), value in scrape(broker.metrics_port).items():
        tags = dict(labels)
        if (name in ("kafka_quota_limit", "kafka_quota_rate") and tags["quota_type"] == "produce"
                and tags["user"] == KAFKA_USER):
            found[name.removeprefix("kafka_quota_")] = value
    return found


def _led_everywhere(broker: BrokerProcess) -> bool:
    """Whether the broker knows a leader for all three partitions (operator listener)."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = admin.list_topics(TOPIC, timeout=5).topics.get(TOPIC)
    return (topic is not None and topic.error is None and len(topic.partitions) == 3
            and all(p.leader >= 0 for p in topic.partitions.values()))


def _lifted_at(sampler: ByteSampler, since_s: float, threshold: float) -> float:
    """Seconds after ``since_s`` at which the broker's rate over 0.5 s (two samples apart)
    first exceeds ``threshold`` (inf if never)."""
    samples = [(at, value) for at, value in sampler.samples if at >= since_s]
    for (earlier_at, earlier), (later_at, later) in zip(samples, samples[2:], strict=False):
        if (later - earlier) / (later_at - earlier_at) > threshold:
            return later_at - since_s
    return float("inf")


def test_raising_a_quota_through_the_api_lifts_the_rate_on_all_brokers_within_two_seconds(
        brokers, make_tenant, admin_api, zk: KazooClient) -> None:  # type: ignore[no-untyped-def]
    api = admin_api(make_tenant("acme"))
    base = "/api/v1/tenants/acme"
    assert api.post(f"{base}/principals/", {"name": PRINCIPAL}, format="json").status_code == 201
    key = api.post(f"{base}/api-keys/", {"principal": PRINCIPAL}, format="json").json()
    acl = api.post(f"{base}/acls/", {"principal": PRINCIPAL, "resource_type": "Topic",
                                     "pattern_type": "PREFIXED", "resource_name": "",
                                     "operation": "All"}, format="json")
    assert acl.status_code == 201, acl.content
    quota = api.post(f"{base}/quotas/", {"principal": PRINCIPAL, "producer_byte_rate": LOW},
                     format="json")
    assert quota.status_code == 201, quota.content
    topic = api.post(f"{base}/topics/", {"name": "orders", "partitions": 3,
                                         "replication_factor": 1}, format="json")
    assert topic.status_code == 201, topic.content

    # The worker publishes asynchronously; the brokers then learn it through watches.
    wait_for(lambda: all(zk.exists(path) for path in (
        f"/config/users/{key['key']}", f"/config/users/{KAFKA_USER}",
        "/acls/prefixed/Topic/acme.", f"/brokers/topics/{TOPIC}")))
    for broker, _ in brokers:
        wait_for(functools.partial(_led_everywhere, broker))
    time.sleep(WATCH_PROPAGATION_S)
    leaders = {p: replicas[0] for p, replicas in json.loads(
        zk.get(f"/brokers/topics/{TOPIC}")[0])["partitions"].items()}
    assert sorted(leaders.values()) == [1, 2, 3], leaders

    stats = PushStats()
    client = producer(f"127.0.0.1:{brokers[0][1]}", "app", stats, {
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": key["key"], "sasl.password": key["secret"], "batch.size": 65536})
    pusher = threading.Thread(target=push, args=(client, "orders", BEFORE_S + AFTER_S, stats),
                              kwargs={"partitions": (0, 1, 2)}, daemon=True)
    samplers = [ByteSampler(broker, "kafka_server_bytes_in_total", TOPIC)
                for broker, _ in brokers]
    for sampler in samplers:
        sampler.__enter__()
    pusher.start()
    try:
        time.sleep(BEFORE_S)
        before = [produce_limits(broker) for broker, _ in brokers]
        raised = api.post(f"{base}/quotas/", {"principal": PRINCIPAL, "producer_byte_rate": HIGH},
                          format="json")
        returned = time.monotonic()
        assert raised.status_code == 201, raised.content
        seen: dict[int, float] = {}
        while len(seen) < len(brokers) and time.monotonic() - returned < LIFT_DEADLINE_S + 3:
            for index, (broker, _) in enumerate(brokers):
                if index not in seen and produce_limits(broker).get("limit") == HIGH:
                    seen[index] = time.monotonic() - returned
            time.sleep(0.02)
        pusher.join(BEFORE_S + AFTER_S + 35)
    finally:
        for sampler in samplers:
            sampler.__exit__()
    assert not pusher.is_alive()
    changed_s = returned - samplers[0].started

    # Before: every broker held the principal at LOW, from its own quota override.
    for metrics in before:
        assert metrics["limit"] == LOW, before
        assert 0.5 * LOW <= metrics["rate"] <= 1.2 * LOW, before
    for sampler in samplers:
        rate = sampler.rate(2.0, changed_s)
        assert 0.5 * LOW <= rate <= 1.2 * LOW, rate
    # After: every broker reports the new limit within 2 s of the REST call returning...
    print(f"limit propagation per broker (s after the REST call returned): {seen}")
    assert sorted(seen) == [0, 1, 2], seen
    assert max(seen.values()) <= LIFT_DEADLINE_S, seen
    # ...and lets the client clearly past the old limit within a few seconds.
    lifted = [_lifted_at(sampler, changed_s, 3 * LOW) for sampler in samplers]
    print(f"bytes-in rate above 3x the old limit per broker after (s): {lifted}")
    assert max(lifted) <= LIFT_DEADLINE_S + 1.5, lifted
    assert stats.errors == [] and stats.throttle_events > 0
