"""The control plane's config and ACL writes, cut by a ZooKeeper blip at each of their
requests in turn and then retried as the Celery task retries them: the node ends as
published and its change notification is written exactly once.  As two writes, a cut
between the node and its notification left the change stored but never announced (the
retry found nothing left to change), and brokers that go by the notifications, as
Kafka's do, never saw it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from tenants import publication, services, znodes
from tenants.zookeeper import put_config
from tests.support.zk_cut_proxy import ZkCutProxy, client_through_proxy

CUTS = pytest.mark.parametrize("reply_lost", [True, False], ids=["reply-lost", "request-lost"])
CONFIG = {"principal": "acme.app", "tenant": "acme"}


@pytest.fixture
def through_proxy(zk_connect: str) -> Iterator[tuple[KazooClient, ZkCutProxy]]:
    """A control-plane client in the test's chroot whose connection a proxy can cut."""
    with client_through_proxy(zk_connect) as connected:
        yield connected


def retried(write: Callable[[], object]) -> object:
    """``write`` run again after a connection loss, as the publishing task's retry runs it."""
    return KazooRetry(max_tries=-1, delay=0.1, max_delay=0.5, deadline=30)(write)


def notifications(zk: Any, parent: str, about: Callable[[dict[str, Any]], bool]) -> int:
    return sum(about(json.loads(zk.get(f"{parent}/{child}")[0]))
               for child in (zk.get_children(parent) if zk.exists(parent) else []))


def cut_at_each_request(proxy: ZkCutProxy, reply_lost: bool,
                        write: Callable[[int], None]) -> None:
    """``write(n)`` uncut (counting its requests), then cut at each of them in turn."""
    proxy.arm(0, reply_lost)
    write(0)
    requests = proxy.requests_seen
    assert requests >= 2
    for cut_at in range(1, requests + 1):
        proxy.arm(cut_at, reply_lost)
        write(cut_at)
        assert proxy.cut.is_set(), f"request {cut_at} was never sent"


@CUTS
def test_a_config_write_cut_anywhere_is_announced_exactly_once(
        through_proxy: tuple[KazooClient, ZkCutProxy], zk: Any, reply_lost: bool) -> None:
    client, proxy = through_proxy
    zk.ensure_path("/config/users")  # as on a running service, where
    zk.ensure_path(znodes.CHANGES_ZNODE)  # every write is alike

    def write(n: int) -> None:
        entity = f"users/KEY{n}"
        for config in (CONFIG, None):  # published, then removed
            retried(lambda config=config: put_config(client, entity, config))  # type: ignore[misc]
            stored = zk.exists(znodes.config_znode(entity))
            assert (stored is None) == (config is None), (entity, config)
        assert notifications(zk, znodes.CHANGES_ZNODE,
                             lambda note: note["entity_path"] == entity) == 2, entity

    cut_at_each_request(proxy, reply_lost, write)


@CUTS
def test_an_acl_write_cut_anywhere_is_announced_exactly_once(
        through_proxy: tuple[KazooClient, ZkCutProxy], zk: Any, make_tenant: Any,
        reply_lost: bool) -> None:
    client, proxy = through_proxy
    acme = make_tenant("acme")
    app = services.create_principal(None, acme, name="app")
    zk.ensure_path("/acls/literal/Topic")
    zk.ensure_path(znodes.ACL_CHANGES_ZNODE)

    def write(n: int) -> None:
        services.grant_acl(None, acme, principal=app, resource_type="Topic",
                           resource_name=f"orders{n}", operation="Write")
        resource = ("LITERAL", "Topic", f"acme.orders{n}")
        retried(lambda: publication.sync_acl_resource(client, resource))
        rules = json.loads(zk.get(znodes.acl_znode(*resource))[0])["acls"]
        assert [(r["principal"], r["operation"]) for r in rules] == [("User:acme.app", "Write")]
        assert notifications(zk, znodes.ACL_CHANGES_ZNODE,
                             lambda note: note["name"] == resource[2]) == 1, resource

    cut_at_each_request(proxy, reply_lost, write)
