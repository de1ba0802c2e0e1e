"""Contract: every znode the control plane writes, read back by brokerd's own readers.

The two sides share ZooKeeper formats (Kafka's JSON, SCRAM credential strings) but not code:
the control plane must never import brokerd.  This test (tests may import both) writes each
kind of node with the control plane's publication functions into a real ZooKeeper and
decodes it the way a broker does:

- tenants, API keys (SCRAM credentials, principal, tenant), ACLs and their change
  notifications: brokerd's ``SecurityWatch`` feeding a real ``SecurityState`` (credentials
  lookup, plan partition allowance and replication factor, the ``Authorizer``);
- quota overrides, plans' quota defaults and ``/config/changes`` notifications: brokerd's
  ``QuotaWatch`` feeding a sink that parses with ``parse_quota_config`` /
  ``TenantQuotaDefaults``;
- ``/admin/reassign_partitions``, ``/admin/preferred_replica_election`` and the throttle in
  ``/config/brokers/<default>``: ``brokerd.coordination.znodes``' decoders.

Topics are not here: the control plane no longer writes topic znodes (it sends CreateTopics
and friends, ``tests/control_plane/test_topics_live.py``; ``tests/test_layers.py`` forbids
the writes).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from kazoo.client import KazooClient

from brokerd.coordination import znodes as broker_znodes
from brokerd.coordination.quota_watch import QuotaWatch
from brokerd.coordination.security_watch import SecurityWatch
from brokerd.quota.resolution import QuotaType, TenantQuotaDefaults, parse_entity_path, parse_quota_config
from brokerd.security.acls import AclOperation, ResourceType, parse_pattern_type, parse_resource_type
from brokerd.security.principal import Principal
from brokerd.security.scram_math import ScramMechanism, client_key, salted_password, server_key, stored_key
from brokerd.server.auth import SecurityState
from quotas import publication as quota_publication
from quotas import services as quota_services
from tenants import publication, reassignments, services
from tenants.models import Acl
from tenants.models import Principal as ControlPlanePrincipal
from tests.control_plane.conftest import wait_for

pytestmark = pytest.mark.integration


class QuotaSink:
    """brokerd's ``QuotaEvents``, parsing as the broker's quota glue does."""

    def __init__(self) -> None:
        self.entities: dict[str, dict[QuotaType, float] | None] = {}
        self.defaults: dict[str, TenantQuotaDefaults | None] = {}

    def quota_entity_changed(self, entity_path: str, config: Mapping[str, object] | None) -> None:
        self.entities[entity_path] = None if config is None else parse_quota_config(config)

    def tenant_quota_defaults_changed(self, slug: str, quota_defaults: Mapping[str, object] | None) -> None:
        self.defaults[slug] = None if quota_defaults is None else TenantQuotaDefaults.from_config(
            slug, quota_defaults)


class BrokerReaders:
    """A broker's security and quota watches on their own ZooKeeper session, with the
    broker's threading: kazoo callbacks submit to one worker thread, events are posted to
    one 'loop' thread."""

    def __init__(self, zk_connect: str) -> None:
        self.client = KazooClient(hosts=zk_connect, timeout=10)
        self.worker = ThreadPoolExecutor(1, thread_name_prefix="zk-worker")
        self.loop = ThreadPoolExecutor(1, thread_name_prefix="loop")
        self.security = SecurityState(super_users=[], max_connections_per_ip=100)
        self.quotas = QuotaSink()

    def start(self) -> None:
        self.client.start(timeout=30)
        def post(fn: Callable[..., None], *args: Any) -> None:
            self.loop.submit(fn, *args)

        def submit(fn: Callable[..., Any], *args: Any) -> None:
            self.worker.submit(fn, *args)

        quota_watch = QuotaWatch(self.client, self.quotas, post, submit)
        watch = SecurityWatch(self.client, self.security, post, submit, hook=quota_watch)

        def start() -> None:
            watch.start()
            quota_watch.start(watch)

        self.worker.submit(start).result(30)

    def stop(self) -> None:
        self.client.stop()
        self.client.close()
        self.worker.shutdown()
        self.loop.shutdown()


@pytest.fixture
def broker(zk_connect: str) -> Iterator[BrokerReaders]:
    readers = BrokerReaders(zk_connect)
    readers.start()
    yield readers
    readers.stop()


def _verifies(credential: Any, mechanism: ScramMechanism, secret: str) -> bool:
    """brokerd's SCRAM math accepts ``secret`` against the stored credential."""
    salted = salted_password(mechanism, secret.encode(), credential.salt, credential.iterations)
    return (stored_key(mechanism, client_key(mechanism, salted)) == credential.stored_key
            and server_key(mechanism, salted) == credential.server_key)


def test_tenants_credentials_and_acls_decode_with_brokerds_security_readers(
        db, zk, broker, make_tenant) -> None:  # type: ignore[no-untyped-def]
    tenant = make_tenant("acme")
    tenant.plan.replication_factor = 3
    tenant.plan.save()
    publication.sync_tenant(zk, "acme")
    wait_for(lambda: broker.security.max_partitions("acme") == tenant.plan.max_partitions)
    assert broker.security.replication_factor("acme") == 3  # the plan's, for CreateTopics
    wait_for(lambda: broker.quotas.defaults.get("acme") == TenantQuotaDefaults(
        "acme", producer_byte_rate=1_048_576.0, consumer_byte_rate=2_097_152.0))

    orders = services.create_principal(None, tenant, name="orders")
    api_key, secret = services.create_api_key(None, orders)
    publication.sync_api_key(zk, api_key.key)
    credentials = wait_for(lambda: broker.security.lookup(api_key.key))
    assert credentials.principal == Principal("acme.orders", "acme")
    assert set(credentials.scram) == set(ScramMechanism)
    assert all(_verifies(credentials.scram[m], m, secret) for m in ScramMechanism)
    assert not _verifies(credentials.scram[ScramMechanism.SCRAM_SHA_512], ScramMechanism.SCRAM_SHA_512, "x")

    for resource_type, pattern, name, operation in (
            (Acl.TOPIC, Acl.PREFIXED, "orders-", "Write"), (Acl.GROUP, Acl.LITERAL, "billing", "Read"),
            (Acl.TOPIC, Acl.PREFIXED, "", "Describe")):
        acl = services.grant_acl(None, tenant, principal=orders, resource_type=resource_type,
                                 pattern_type=pattern, resource_name=name, operation=operation)
        publication.sync_acl_resource(zk, (acl.pattern_type, acl.resource_type, acl.physical_resource_name))
    who = Principal("acme.orders", "acme")
    authorize = broker.security.authorizer.authorize
    wait_for(lambda: authorize(who, AclOperation.WRITE, ResourceType.TOPIC, "acme.orders-eu"))
    wait_for(lambda: authorize(who, AclOperation.READ, ResourceType.GROUP, "acme.billing"))
    wait_for(lambda: authorize(who, AclOperation.DESCRIBE, ResourceType.TOPIC, "acme.anything"))
    assert not authorize(who, AclOperation.WRITE, ResourceType.TOPIC, "acme.payments")
    assert not authorize(who, AclOperation.DESCRIBE, ResourceType.TOPIC, "globex.orders")

    # withdrawals reach the broker too: the key stops authenticating, the rule stops allowing
    services.revoke_api_key(None, api_key)
    publication.sync_api_key(zk, api_key.key)
    wait_for(lambda: broker.security.lookup(api_key.key) is None)
    write_rule = Acl.objects.get(operation="Write")
    services.revoke_acl(None, write_rule)
    publication.sync_acl_resource(zk, (Acl.PREFIXED, Acl.TOPIC, "acme.orders-"))
    wait_for(lambda: not authorize(who, AclOperation.WRITE, ResourceType.TOPIC, "acme.orders-eu"))

    # every ACL change notification names a resource in the terms brokerd parses
    notified = {(parse_pattern_type(n["patternType"]), parse_resource_type(n["resourceType"]), n["name"])
                for n in _notifications(zk, "/acls/changes")}
    assert (parse_pattern_type("PREFIXED"), ResourceType.TOPIC, "acme.orders-") in notified
    assert (parse_pattern_type("LITERAL"), ResourceType.GROUP, "acme.billing") in notified
    assert f"users/{api_key.key}" in {n["entity_path"] for n in _notifications(zk, "/config/changes")}


def _notifications(zk: KazooClient, parent: str) -> list[dict[str, Any]]:
    """The JSON of every sequential change notification under ``parent``, oldest first."""
    return [json.loads(zk.get(f"{parent}/{child}")[0]) for child in sorted(zk.get_children(parent))]


def test_quota_entities_decode_with_brokerds_quota_readers(db, zk, broker, make_tenant) -> None:  # type: ignore[no-untyped-def]
    tenant = make_tenant("acme")
    orders = ControlPlanePrincipal.objects.create(tenant=tenant, name="orders")
    written = [
        quota_services.set_quota(None, tenant=tenant, principal=orders, client_id="app-1",
                                 producer_byte_rate=1024),
        quota_services.set_quota(None, tenant=tenant, principal=orders, consumer_byte_rate=4096),
        quota_services.set_quota(None, tenant=None, principal=None, client_id="my app/2",
                                 request_percentage=25.5),
        quota_services.set_quota(None, tenant=None, principal=None, default_user=True,
                                 client_id="<default>", producer_byte_rate=10),
    ]
    for override in written:
        quota_publication.sync_quota(zk, override.entity_path)
    expected = {
        "users/acme.orders/clients/app-1": ({QuotaType.PRODUCE: 1024.0}, ("acme.orders", "app-1")),
        "users/acme.orders": ({QuotaType.FETCH: 4096.0}, ("acme.orders", None)),
        "clients/my%20app%2F2": ({QuotaType.REQUEST: 25.5}, (None, "my app/2")),
        "users/<default>/clients/<default>": ({QuotaType.PRODUCE: 10.0}, ("<default>", "<default>")),
    }
    assert {o.entity_path for o in written} == set(expected)
    for path, (limits, entity) in expected.items():
        wait_for(functools.partial(lambda p, want: broker.quotas.entities.get(p) == want, path, limits))
        assert parse_entity_path(path) == entity
    # each write was announced, in the form brokerd's watch routes by (version 2, entity_path)
    notices = _notifications(zk, "/config/changes")
    assert {n["version"] for n in notices} == {2}
    assert {parse_entity_path(n["entity_path"]) for n in notices} == {e for _, e in expected.values()}

    quota_services.delete_quota(None, written[0])
    quota_publication.sync_quota(zk, written[0].entity_path)
    wait_for(lambda: "users/acme.orders/clients/app-1" in broker.quotas.entities
             and broker.quotas.entities["users/acme.orders/clients/app-1"] is None)


def test_admin_requests_and_the_throttle_decode_with_brokerds_znode_readers(zk) -> None:  # type: ignore[no-untyped-def]
    assert reassignments.write_request(zk, {("acme.orders", 0): [3, 1], ("acme.orders", 1): [2, 3]})
    assert sorted(broker_znodes.decode_partition_requests(zk.get(broker_znodes.REASSIGN_PARTITIONS)[0]),
                  key=lambda r: r.partition) == [
        broker_znodes.PartitionRequest("acme.orders", 0, (3, 1)),
        broker_znodes.PartitionRequest("acme.orders", 1, (2, 3))]

    assert reassignments.request_election(zk, [("acme.orders", 0)])
    assert broker_znodes.decode_partition_requests(zk.get(broker_znodes.PREFERRED_ELECTION)[0]) == [
        broker_znodes.PartitionRequest("acme.orders", 0)]

    assert reassignments.apply_throttle(zk, 1_048_576)
    path = broker_znodes.broker_config_path(broker_znodes.DEFAULT_BROKER_CONFIG)
    assert broker_znodes.decode_topic_config(zk.get(path)[0]) == {
        "follower.replication.throttled.rate": "1048576"}
    assert reassignments.apply_throttle(zk, None)
    assert "follower.replication.throttled.rate" not in broker_znodes.decode_topic_config(
        zk.get(path)[0] if zk.exists(path) else None)
