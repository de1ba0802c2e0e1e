"""Topics with real brokers, both directions (issue 19, item 2).

Control plane → cluster: a REST topic reaches brokerd as CreateTopics / CreatePartitions /
IncrementalAlterConfigs / DeleteTopics on the operator listener; brokerd's controller places
the replicas (rack-aware here: two racks, and every partition spans both).
Cluster → control plane: a topic a tenant's own Kafka client creates, grows or deletes (SASL,
SCRAM, the API key the REST API handed out) appears in, changes in and disappears from the
REST API and the console within seconds — Celery beat's ``discover_topics`` round, which the
test runs as beat would, every ``TOPIC_DISCOVERY_INTERVAL_S``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic, ResourceType
from django.test import Client

from tenants import services, tasks
from tenants.models import AuditEvent, Topic, TopicDeletion
from tests.integration.brokerd.tenancy_fixtures import WATCH_PROPAGATION_S

from .conftest import running_brokers, wait_for

pytestmark = pytest.mark.integration

RACKS = {1: "rack-a", 2: "rack-a", 3: "rack-b", 4: "rack-b"}
DISCOVERY_S = 2.0  # the beat period the test runs discovery at (TOPIC_DISCOVERY_INTERVAL_S)


@contextmanager
def beat(task, period: float) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """Enqueue ``task`` every ``period`` seconds, as Celery beat does."""
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(period):
            task.delay()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _json(zk, path):  # type: ignore[no-untyped-def]
    return json.loads(zk.get(path)[0]) if zk.exists(path) else None


def _topic_configs(bootstrap: str, topic: str) -> dict[str, str] | None:
    """The topic's own overrides as a broker describes them (None: that broker has no such topic yet)."""
    resource = ConfigResource(ResourceType.TOPIC, topic)
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the answer is in
    try:
        entries = admin.describe_configs([resource])[resource].result(10)
    except KafkaException:
        return None
    return {k: e.value for k, e in entries.items() if e.source == 1}


def test_rest_topics_are_asked_of_brokerd_which_places_them_rack_aware(
        publishing, tmp_path, settings, zk, make_tenant, admin_api) -> None:  # type: ignore[no-untyped-def]
    with running_brokers(publishing, tmp_path, settings, RACKS) as brokers:
        bootstrap = settings.OPERATOR_BOOTSTRAP_SERVERS
        wait_for(lambda: len(zk.get_children("/brokers/ids")) == 4 if zk.exists("/brokers/ids") else False)
        api = admin_api(make_tenant("acme"))
        created = api.post("/api/v1/tenants/acme/topics/",
                           {"name": "orders", "partitions": 4, "replication_factor": 2,
                            "configs": {"retention.ms": "60000"}}, format="json")
        assert created.status_code == 201, created.content

        placed = wait_for(lambda: _json(zk, "/brokers/topics/acme.orders"))["partitions"]
        spans = [{RACKS[b] for b in replicas} for replicas in placed.values()]
        assert all(racks == {"rack-a", "rack-b"} for racks in spans), placed
        wait_for(lambda: _topic_configs(bootstrap, "acme.orders") == {"retention.ms": "60000"})
        shown = wait_for(lambda: api.get("/api/v1/tenants/acme/topics/orders/").json()["assignment"])
        assert shown == placed and api.get("/api/v1/tenants/acme/topics/orders/").json()[
            "replication_factor"] == 2

        # more partitions (CreatePartitions) and new configs (IncrementalAlterConfigs)
        grown = api.patch("/api/v1/tenants/acme/topics/orders/",
                          {"partitions": 6, "configs": {"cleanup.policy": "compact"}}, format="json")
        assert grown.status_code == 200, grown.content
        assert api.patch("/api/v1/tenants/acme/topics/orders/", {"partitions": 2},
                         format="json").status_code == 400  # partitions never shrink
        wait_for(lambda: len(_json(zk, "/brokers/topics/acme.orders")["partitions"]) == 6)
        wait_for(lambda: _topic_configs(bootstrap, "acme.orders") == {"cleanup.policy": "compact"})

        # a request brokerd refuses is retried and shows in the audit log
        services.create_topic(None, make_tenant("globex"), name="bad", partitions=1,
                              replication_factor=1, configs={"retention.ms": "soon"})
        failure = wait_for(lambda: AuditEvent.objects.filter(action="publication.retrying",
                                                             target__contains="globex.bad").first())
        assert "INVALID_CONFIG" in failure.details["error"]
        assert failure.tenant is not None and failure.tenant.slug == "globex"
        services.delete_topic(None, Topic.objects.get(name="bad"))  # its retries now find nothing to do

        # DeleteTopics; the tombstone keeps discovery from re-adopting it meanwhile
        assert api.delete("/api/v1/tenants/acme/topics/orders/").status_code == 204
        with beat(tasks.discover_topics, DISCOVERY_S / 4):
            wait_for(lambda: not zk.exists("/brokers/topics/acme.orders"))
            wait_for(lambda: not TopicDeletion.objects.exists())
            time.sleep(DISCOVERY_S / 2)
        assert not Topic.objects.filter(name="orders").exists()
        assert all(b.process is not None and b.process.poll() is None for b, _ in brokers)


def _tenant_admin_client(sasl_port: int, key: dict[str, str]) -> AdminClient:
    return AdminClient({"bootstrap.servers": f"127.0.0.1:{sasl_port}", "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": key["key"],
                        "sasl.password": key["secret"]})


def _listed(api) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {t["name"]: t["partitions"] for t in api.get("/api/v1/tenants/acme/topics/").json()["results"]}


def test_topics_made_over_kafka_appear_in_the_api_and_console_within_seconds(
        publishing, tmp_path, settings, zk, make_tenant, admin_api, django_user_model) -> None:  # type: ignore[no-untyped-def]
    settings.DEFAULT_RF_WAIT_S = 2.0
    with running_brokers(publishing, tmp_path, settings, {1: None}, sasl=True) as brokers:
        tenant = make_tenant("acme")
        api = admin_api(tenant)
        base = "/api/v1/tenants/acme"
        assert api.post(f"{base}/principals/", {"name": "app"}, format="json").status_code == 201
        key = api.post(f"{base}/api-keys/", {"principal": "app"}, format="json").json()
        assert api.post(f"{base}/acls/", {"principal": "app", "resource_type": "Topic",
                                          "pattern_type": "PREFIXED", "resource_name": "",
                                          "operation": "All"}, format="json").status_code == 201
        wait_for(lambda: zk.exists(f"/config/users/{key['key']}") and zk.exists("/acls/prefixed/Topic/acme.")
                 and zk.exists("/tenants/acme"))
        time.sleep(WATCH_PROPAGATION_S)

        # a REST topic without a factor waits for more brokers, then takes the one there is
        api.post(f"{base}/topics/", {"name": "early", "partitions": 1}, format="json")
        time.sleep(0.5)
        assert not zk.exists("/brokers/topics/acme.early")
        early = wait_for(lambda: _json(zk, "/brokers/topics/acme.early"), timeout=30)
        assert early["partitions"] == {"0": [1]}

        sasl_port = brokers[0][1]
        assert sasl_port is not None
        client = _tenant_admin_client(sasl_port, key)
        assert settings.CELERY_BEAT_SCHEDULE["discover-topics"]["task"] == "tenants.tasks.discover_topics"
        with beat(tasks.discover_topics, settings.TOPIC_DISCOVERY_INTERVAL_S):
            client.create_topics([NewTopic("clicks", 2, 1)])["clicks"].result(15)
            created_at = time.monotonic()
            wait_for(lambda: _listed(api).get("clicks") == 2, timeout=10)
            assert time.monotonic() - created_at < 2 * DISCOVERY_S + 2
            assert zk.exists("/brokers/topics/acme.clicks")  # the broker mapped the tenant's name

            console = Client()
            console.force_login(django_user_model.objects.get(username="admin-acme"))
            assert "clicks" in console.get("/t/acme/topics/").content.decode()
            event = AuditEvent.objects.get(action="topic.discover")
            assert event.target == "acme.clicks" and event.tenant == tenant

            # counted once against the plan (max 20): 1 + 2 partitions used, 17 left
            assert api.post(f"{base}/topics/", {"name": "big", "partitions": 18},
                            format="json").status_code == 400
            # a discovered topic is managed like any other: configs go through the broker
            assert api.patch(f"{base}/topics/clicks/", {"configs": {"retention.ms": "120000"}},
                             format="json").status_code == 200
            wait_for(lambda: _topic_configs(brokers[0][0].bootstrap, "acme.clicks") == {
                "retention.ms": "120000"})

            client.create_partitions([NewPartitions("clicks", 3)])["clicks"].result(15)
            wait_for(lambda: _listed(api).get("clicks") == 3, timeout=10)

            client.delete_topics(["clicks"])["clicks"].result(15)
            wait_for(lambda: "clicks" not in _listed(api), timeout=10)
            assert AuditEvent.objects.filter(action="topic.forget", target="acme.clicks").exists()
            assert set(_listed(api)) == {"early"}
