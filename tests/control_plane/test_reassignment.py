"""Partition reassignment through the REST API, a real Celery worker and the session's ZooKeeper.

The controller is simulated the way brokerd's does its part: it rewrites the topic znode (with
Kafka's adding/removing maps while moving, then exactly the target) and removes the partition
from ``/admin/reassign_partitions``.
"""

from __future__ import annotations

import json

import pytest

from tenants import tasks
from tenants.models import AuditEvent, Reassignment, Topic

from .conftest import wait_for

pytestmark = pytest.mark.integration

REQUEST = "/admin/reassign_partitions"
THROTTLE = "/config/brokers/<default>"
URL = "/api/v1/reassignments/"


def _json(zk, path):  # type: ignore[no-untyped-def]
    return json.loads(zk.get(path)[0]) if zk.exists(path) else None


def _notified(zk) -> list[str]:  # type: ignore[no-untyped-def]
    if not zk.exists("/config/changes"):
        return []
    return [_json(zk, f"/config/changes/{c}")["entity_path"]
            for c in sorted(zk.get_children("/config/changes"))]


@pytest.fixture
def cluster(publishing, zk, make_tenant, operator_api):  # type: ignore[no-untyped-def]
    """Four registered brokers and a tenant topic acme.orders (2 partitions, RF 3) placed on them
    — written as brokerd's CreateTopics writes it, and discovered by the control plane."""
    for broker_id in (1, 2, 3, 4):
        zk.create(f"/brokers/ids/{broker_id}", b"{}", makepath=True, ephemeral=True)
    make_tenant("acme")
    wait_for(lambda: zk.exists("/tenants/acme"))  # one writer at a time on the SQLite test database
    partitions = {"0": [1, 2, 3], "1": [2, 3, 4]}
    zk.create("/brokers/topics/acme.orders", json.dumps({
        "version": 3, "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": partitions,
        "adding_replicas": {}, "removing_replicas": {}}).encode(), makepath=True)
    tasks.discover_topics.delay()
    wait_for(lambda: Topic.objects.filter(name="orders").exists())
    return partitions


def _spare(replicas: list[int]) -> int:
    return next(b for b in (1, 2, 3, 4) if b not in replicas)


def _controller_writes(zk, partitions, adding=None, removing=None) -> None:  # type: ignore[no-untyped-def]
    topic = _json(zk, "/brokers/topics/acme.orders")
    topic.update(partitions=partitions, adding_replicas=adding or {}, removing_replicas=removing or {})
    zk.set("/brokers/topics/acme.orders", json.dumps(topic).encode())


def test_post_writes_kafkas_request_and_throttle_refuses_a_moving_partition(
        cluster, zk, operator_api) -> None:  # type: ignore[no-untyped-def]
    original = cluster["0"]
    target = [_spare(original), *original[1:]]
    created = operator_api.post(URL, {"topic": "acme.orders", "partition": 0, "replicas": target,
                                      "throttle": 1_048_576}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["original_replicas"] == original

    assert wait_for(lambda: _json(zk, REQUEST)) == {"version": 1, "partitions": [
        {"topic": "acme.orders", "partition": 0, "replicas": target}]}
    assert wait_for(lambda: _json(zk, THROTTLE)) == {
        "version": 1, "config": {"follower.replication.throttled.rate": "1048576"}}
    wait_for(lambda: "brokers/<default>" in _notified(zk))
    wait_for(lambda: Reassignment.objects.get().state == Reassignment.RUNNING)
    assert AuditEvent.objects.filter(action="reassignment.create", target="acme.orders-0").count() == 1

    again = operator_api.post(URL, {"topic": "acme.orders", "partition": 0, "replicas": original},
                              format="json")
    assert again.status_code == 409 and "already being reassigned" in again.json()["detail"]

    # another partition joins the pending request by a conditional merge
    other = [_spare(cluster["1"]), *cluster["1"][1:]]
    assert operator_api.post(URL, {"topic": "acme.orders", "partition": 1, "replicas": other},
                             format="json").status_code == 201
    wait_for(lambda: len(_json(zk, REQUEST)["partitions"]) == 2)
    assert _json(zk, REQUEST)["partitions"][0]["replicas"] == target
    wait_for(lambda: Reassignment.objects.filter(state=Reassignment.RUNNING).count() == 2)

    # a partition some other tool is moving counts as moving too
    Reassignment.objects.all().delete()
    refused = operator_api.post(URL, {"topic": "acme.orders", "partition": 1, "replicas": cluster["1"]},
                                format="json")
    assert refused.status_code == 409


def test_tracking_follows_the_controller_to_complete_and_removes_the_throttle(
        cluster, zk, operator_api) -> None:  # type: ignore[no-untyped-def]
    original = cluster["0"]
    new = _spare(original)
    target = [new, *original[1:]]
    move_id = operator_api.post(URL, {"topic": "acme.orders", "partition": 0, "replicas": target,
                                      "throttle": 5000}, format="json").json()["id"]
    wait_for(lambda: Reassignment.objects.get().state == Reassignment.RUNNING)
    assert _json(zk, THROTTLE)["config"] == {"follower.replication.throttled.rate": "5000"}

    # the controller starts: target + (original - target), the new replica not yet in sync
    _controller_writes(zk, {**cluster, "0": [*target, original[0]]},
                       adding={"0": [new]}, removing={"0": [original[0]]})
    zk.create("/brokers/topics/acme.orders/partitions/0/state",
              json.dumps({"leader": original[0], "leader_epoch": 3, "isr": original}).encode(),
              makepath=True)
    tasks.track_reassignments.delay()
    wait_for(lambda: "waiting for" in Reassignment.objects.get().progress)
    detail = operator_api.get(f"{URL}{move_id}/").json()
    assert detail["state"] == "running"
    assert detail["live"] == {"replicas": [*target, original[0]], "adding_replicas": [new],
                              "removing_replicas": [original[0]], "isr": original,
                              "leader": original[0], "leader_epoch": 3, "requested": target}

    # the controller finishes: assignment == target, maps empty, partition out of the request
    _controller_writes(zk, {**cluster, "0": target})
    zk.delete(REQUEST)
    tasks.track_reassignments.delay()
    wait_for(lambda: Reassignment.objects.get().state == Reassignment.COMPLETE)
    move = Reassignment.objects.get()
    assert move.finished_at is not None and move.progress.startswith("complete")
    assignment = Topic.objects.get(name="orders").assignment
    assert assignment is not None and assignment["0"] == target

    # shrinking one partition to 2 replicas leaves the topic's factor (3) until all have 2
    operator_api.post(URL, {"topic": "acme.orders", "partition": 1, "replicas": cluster["1"][:2]},
                      format="json")
    wait_for(lambda: Reassignment.objects.filter(state=Reassignment.RUNNING).exists())
    _controller_writes(zk, {"0": target, "1": cluster["1"][:2]})
    zk.delete(REQUEST)
    tasks.track_reassignments.delay()
    wait_for(lambda: not Reassignment.objects.filter(state=Reassignment.RUNNING).exists())
    assert Topic.objects.get(name="orders").replication_factor == 3
    wait_for(lambda: _json(zk, THROTTLE) is None)
    assert _notified(zk).count("brokers/<default>") == 2


def test_bad_payloads_answer_400_and_write_nothing(cluster, zk, operator_api) -> None:  # type: ignore[no-untyped-def]
    bad = {
        "topic": {"topic": "acme.nope", "partition": 0, "replicas": [1, 2]},
        "partition": {"topic": "acme.orders", "partition": 2, "replicas": [1, 2]},
        "replicas": {"topic": "acme.orders", "partition": 0, "replicas": [1, 9]},
    }
    for field, payload in bad.items():
        answer = operator_api.post(URL, payload, format="json")
        assert answer.status_code == 400 and field in answer.json(), (payload, answer.content)
    for payload in ({"topic": "acme.orders", "partition": 0, "replicas": []},
                    {"topic": "acme.orders", "partition": 0, "replicas": [1, 1]},
                    {"topic": "acme.orders", "partition": -1, "replicas": [1]},
                    {"topic": "acme.orders", "partition": 0, "replicas": [1], "throttle": 0},
                    {"partition": 0, "replicas": [1]}):
        assert operator_api.post(URL, payload, format="json").status_code == 400, payload
    assert not Reassignment.objects.exists()
    assert not AuditEvent.objects.filter(action="reassignment.create").exists()
    assert not zk.exists(REQUEST) and not zk.exists(THROTTLE)


def test_tenant_admins_get_403(cluster, make_tenant, admin_api, operator_api) -> None:  # type: ignore[no-untyped-def]
    from tenants.models import Tenant

    api = admin_api(Tenant.objects.get(slug="acme"))
    payload = {"topic": "acme.orders", "partition": 0, "replicas": cluster["0"]}
    assert api.post(URL, payload, format="json").status_code == 403
    assert api.get(URL).status_code == 403
    move_id = operator_api.post(URL, payload, format="json").json()["id"]
    assert api.get(f"{URL}{move_id}/").status_code == 403
    election = {"partitions": [{"topic": "acme.orders", "partition": 0}]}
    assert api.post("/api/v1/preferred-leader-elections/", election, format="json").status_code == 403
    wait_for(lambda: Reassignment.objects.get().state == Reassignment.RUNNING)  # the operator's only


def test_preferred_leader_election_request(cluster, zk, operator_api) -> None:  # type: ignore[no-untyped-def]
    asked = operator_api.post("/api/v1/preferred-leader-elections/",
                              {"partitions": [{"topic": "acme.orders", "partition": 1},
                                              {"topic": "acme.orders", "partition": 0}]}, format="json")
    assert asked.status_code == 202, asked.content
    assert wait_for(lambda: _json(zk, "/admin/preferred_replica_election")) == {
        "version": 1, "partitions": [{"topic": "acme.orders", "partition": 0},
                                     {"topic": "acme.orders", "partition": 1}]}
    unknown = operator_api.post("/api/v1/preferred-leader-elections/",
                                {"partitions": [{"topic": "acme.orders", "partition": 5}]}, format="json")
    assert unknown.status_code == 400 and "partition" in unknown.json()
    assert AuditEvent.objects.filter(action="leader_election.request").count() == 1


@pytest.mark.django_db
def test_openapi_documents_the_cluster_endpoints(client) -> None:  # type: ignore[no-untyped-def]
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert {"post", "get"} <= schema["paths"]["/api/v1/reassignments/"].keys()
    assert "409" in schema["paths"]["/api/v1/reassignments/"]["post"]["responses"]
    assert "live" in schema["components"]["schemas"]["ReassignmentDetail"]["properties"]
    assert "post" in schema["paths"]["/api/v1/preferred-leader-elections/"]


@pytest.mark.django_db
def test_start_fails_a_move_another_tool_requested_meanwhile_and_lifts_its_throttle(zk) -> None:  # type: ignore[no-untyped-def]
    from tenants import reassignments

    zk.create(REQUEST, b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,2]}]}',
              makepath=True)
    move = Reassignment.objects.create(topic="t", partition=0, replicas=[1, 2], throttle=10)
    assert reassignments.start(zk, move.pk)[-1].startswith("refused")
    move.refresh_from_db()
    assert move.state == Reassignment.FAILED and "already being moved to [3, 2]" in move.progress
    assert _json(zk, REQUEST)["partitions"] == [{"topic": "t", "partition": 0, "replicas": [3, 2]}]
    assert reassignments.track(zk) == ["throttle removed"] and not zk.exists(THROTTLE)
