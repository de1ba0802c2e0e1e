"""Operators' security page and REST views: SCRAM users and ACL rules made over Kafka, read
from a real ZooKeeper (written here as brokerd's admin APIs write them)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tenants import publication, services
from tenants.credentials import scram_credential

pytestmark = pytest.mark.django_db


def _kafka_made(zk: Any) -> None:
    config = {"SCRAM-SHA-512": scram_credential("pw", "SCRAM-SHA-512", iterations=8192)}
    zk.create("/config/users/ops-tool", json.dumps({"version": 1, "config": config}).encode(),
              makepath=True)
    zk.create("/acls/literal/Topic/__usage", json.dumps({"version": 1, "acls": [
        {"principal": "User:ops-tool", "permissionType": "Allow", "operation": "Read",
         "host": "*"}]}).encode(), makepath=True)


def test_operators_see_kafka_made_users_and_rules(operator_client: Client, operator: Any,
                                                  admin_client_for: Any, make_tenant: Any,
                                                  settings: Any, zk_connect: str, zk: Any) -> None:
    from tenants.zookeeper import close_all

    settings.ZOOKEEPER_CONNECT = zk_connect
    acme = make_tenant("acme")
    app = services.create_principal(None, acme, name="app")
    services.grant_acl(None, acme, principal=app, resource_type="Topic",
                       resource_name="orders", operation="Read")
    publication.sync_acl_resource(zk, ("LITERAL", "Topic", "acme.orders"))
    _kafka_made(zk)
    try:
        page = operator_client.get("/ops/security/")
        assert page.status_code == 200
        html = page.content.decode()
        users = html.split('id="scram-users"')[1].split("</table>")[0]
        assert "ops-tool" in users and "SCRAM-SHA-512 (8192 iterations)" in users
        rules = html.split('id="cluster-acls"')[1].split("</table>")[0]
        assert "__usage" in rules and "over Kafka only" in rules
        assert "acme.orders" in rules and "User:acme.app" in rules
        assert admin_client_for(acme).get("/ops/security/").status_code == 404

        api = APIClient()
        api.force_authenticate(operator)
        assert api.get("/api/v1/scram-users/").json() == [
            {"name": "ops-tool", "mechanisms": [{"mechanism": "SCRAM-SHA-512", "iterations": 8192}]}]
        assert {(r["resource_name"], r["principal"], r["managed"])
                for r in api.get("/api/v1/acls/").json()} == {
            ("__usage", "User:ops-tool", False), ("acme.orders", "User:acme.app", True)}
    finally:
        close_all()
