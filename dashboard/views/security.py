"""Operators' security page: what Kafka clients made on the cluster (SCRAM users from
AlterUserScramCredentials, ACL rules from CreateAcls), read from ZooKeeper as the brokers see it.

Tenants' own rules made over Kafka are also adopted as their ACL rows (``tenants.acl_sync``);
this page adds the rules no tenant holds, and the users no API key stands for.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from tenants import acl_sync, scram_users
from tenants.zookeeper import client

from .common import operator_view


@operator_view
def security(request: HttpRequest) -> HttpResponse:
    try:
        zk = client()
        context: dict[str, object] = {"users": scram_users.scram_users(zk),
                                      "rules": acl_sync.cluster_rules(zk)}
    except (KazooException, KazooTimeoutError):
        context = {"error": "ZooKeeper is unreachable; try again."}
    return render(request, "dashboard/ops_security.html", context)
