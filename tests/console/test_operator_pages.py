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
    assert [b.replicas for b in view.brokers] == [3, 2, 1]
    assert (brokers[2].under_replicated_led, brokers[1].out_of_sync) == (1, 1)
    assert view.not_preferred == []
    moved = summarize({1: b"{}", 2: b"{}"}, None, {"t": b'{"partitions":{"0":[1,2]}}'},
                      {("t", 0): b'{"leader":2,"isr":[1,2]}'})
    assert moved.not_preferred == [("t", 0)] and moved.under_replicated == []


def test_brokers_page_says_when_zookeeper_is_unreachable(operator_client: Client, settings,  # type: ignore[no-untyped-def]
                                                         monkeypatch) -> None:
    from kazoo.handlers.threading import KazooTimeoutError

    from dashboard.views import operator

    def unreachable() -> None:
        raise KazooTimeoutError("Connection time-out")

    monkeypatch.setattr(operator, "client", unreachable)
    page = operator_client.get("/ops/brokers/")
    assert page.status_code == 200 and "ZooKeeper is unreachable" in page.content.decode()


def test_operator_starts_a_reassignment_and_sees_it_with_per_broker_health(  # type: ignore[no-untyped-def]
        operator_client: Client, admin_client_for, acme, settings, zk_connect: str, zk) -> None:
    from tenants.models import Reassignment
    from tenants.zookeeper import close_all

    settings.ZOOKEEPER_CONNECT = zk_connect
    for broker_id in (1, 2, 3):
        zk.create(f"/brokers/ids/{broker_id}", b"{}", makepath=True)
    zk.create("/brokers/topics/acme.orders", b'{"partitions":{"0":[1,2],"1":[2,1]}}', makepath=True)
    zk.create("/brokers/topics/acme.orders/partitions/0/state", b'{"leader":2,"isr":[1,2]}',
              makepath=True)
    zk.create("/brokers/topics/acme.orders/partitions/1/state", b'{"leader":2,"isr":[2]}',
              makepath=True)
    form = {"topic": "acme.orders", "partition": "0", "replicas": "3, 2", "throttle": "1000"}
    try:
        assert operator_client.post("/ops/brokers/", form).status_code == 302
        again = operator_client.post("/ops/brokers/", {**form, "replicas": "1,3"}).content.decode()
        unknown = operator_client.post("/ops/brokers/", {**form, "partition": "1", "replicas": "1,7"})
        page = operator_client.get("/ops/brokers/").content.decode()
        elected = operator_client.post("/ops/brokers/preferred-election/")
    finally:
        close_all()
    assert "already being reassigned" in again
    assert "brokers [7] are not registered" in unknown.content.decode()
    move = Reassignment.objects.get()
    assert (move.replicas, move.original_replicas, move.throttle) == ([3, 2], [1, 2], 1000)
    assert move.state == Reassignment.PENDING  # no worker here: on_commit tasks do not run
    assert "acme.orders-0" in page and "1000 B/s" in page and "pending" in page
    assert "1 not led by their preferred replica" in page and 'id="preferred-election"' in page
    assert elected.status_code == 302
    assert AuditEvent.objects.get(action="leader_election.request").target == "acme.orders-0"
    assert admin_client_for(acme).post("/ops/brokers/", form).status_code == 404
    assert Reassignment.objects.count() == 1
