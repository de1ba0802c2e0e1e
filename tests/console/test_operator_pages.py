"""Operators' pages: tenants (create, suspend) and brokers read from a real ZooKeeper."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from dashboard.cluster import summarize
from tenants.models import AuditEvent, Tenant

pytestmark = pytest.mark.django_db


def test_operator_creates_suspends_and_resumes_a_tenant(operator_client: Client, plan) -> None:  # type: ignore[no-untyped-def]
    response = operator_client.post("/ops/tenants/", {"slug": "initech", "name": "Initech",
                                                      "plan": "basic"})
    assert response.status_code == 302
    assert Tenant.objects.get(slug="initech").plan == plan
    assert "initech" in operator_client.get("/ops/tenants/").content.decode()
    operator_client.post("/ops/tenants/initech/status/", {"status": "suspended"})
    assert Tenant.objects.get(slug="initech").status == Tenant.SUSPENDED
    operator_client.post("/ops/tenants/initech/status/", {"status": "active"})
    assert Tenant.objects.get(slug="initech").status == Tenant.ACTIVE
    assert AuditEvent.objects.filter(action="tenant.update").count() == 2
    bad = operator_client.post("/ops/tenants/", {"slug": "Not A Slug", "name": "x", "plan": "basic"})
    assert bad.status_code == 200 and Tenant.objects.count() == 1


def test_operator_sees_every_tenants_pages(operator_client: Client, make_tenant) -> None:  # type: ignore[no-untyped-def]
    make_tenant("acme")
    assert operator_client.get("/t/acme/topics/").status_code == 200


def test_brokers_page_reads_registrations_controller_and_partition_states(
        operator_client: Client, settings, zk_connect: str, zk) -> None:  # type: ignore[no-untyped-def]
    from tenants.zookeeper import close_all

    settings.ZOOKEEPER_CONNECT = zk_connect
    zk.create("/brokers/ids/1", json.dumps({"endpoints": ["PLAINTEXT://127.0.0.1:9092"]}).encode(),
              makepath=True)
    zk.create("/controller", b'{"version":2,"brokerid":1,"timestamp":"0"}')
    zk.create("/brokers/topics/acme.orders",
              json.dumps({"partitions": {"0": [1, 2], "1": [2, 1]}}).encode(), makepath=True)
    zk.create("/brokers/topics/acme.orders/partitions/0/state",
              b'{"leader":1,"isr":[1],"leader_epoch":0,"controller_epoch":1}', makepath=True)
    zk.create("/brokers/topics/acme.orders/partitions/1/state",
              b'{"leader":2,"isr":[2],"leader_epoch":0,"controller_epoch":1}', makepath=True)
    try:
        page = operator_client.get("/ops/brokers/").content.decode()
    finally:
        close_all()
    assert "PLAINTEXT://127.0.0.1:9092" in page and "controller" in page
    assert "1 under-replicated" in page and "1 offline" in page and "acme.orders-1" in page


def test_cluster_summary_rules() -> None:
    view = summarize(
        registrations={1: b'{"endpoints":["PLAINTEXT://a:1"],"rack":"r1"}', 2: b"{}"},
        controller=b'{"brokerid":2}',
        assignments={"t": b'{"partitions":{"0":[1,2],"1":[2,1],"2":[3,1]}}'},
        states={("t", 0): b'{"leader":1,"isr":[1,2]}', ("t", 1): b'{"leader":2,"isr":[2]}',
                ("t", 2): b'{"leader":3,"isr":[3]}'})
    brokers = {b.broker_id: b for b in view.brokers}
    assert (brokers[1].up, brokers[1].rack, brokers[1].partitions_led) == (True, "r1", 1)
    assert brokers[2].is_controller and brokers[2].partitions_led == 1
    assert not brokers[3].up  # named in an assignment, not registered
    assert view.under_replicated == ["t-1"] and view.offline == ["t-2"] and view.partitions == 3


def test_brokers_page_says_when_zookeeper_is_unreachable(operator_client: Client, settings,  # type: ignore[no-untyped-def]
                                                         monkeypatch) -> None:
    from kazoo.handlers.threading import KazooTimeoutError

    from dashboard.views import operator

    def unreachable() -> None:
        raise KazooTimeoutError("Connection time-out")

    monkeypatch.setattr(operator, "client", unreachable)
    page = operator_client.get("/ops/brokers/")
    assert page.status_code == 200 and "ZooKeeper is unreachable" in page.content.decode()
