"""Quotas of tenant principals over SASL: a principal's own override, and its tenant plan's
``quota_defaults`` standing in for the ``<default>`` user level (issue 7, item 1)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from kazoo.client import KazooClient

from tenants import znodes
from tenants import zookeeper as control_plane
from tests.integration.brokerd.quota_support import (
    PushStats,
    create_topic,
    producer,
    push,
    set_quota,
)
from tests.integration.brokerd.tenancy_fixtures import (
    WATCH_PROPAGATION_S,
    ApiKey,
    add_api_key,
    confluent_auth,
    start_secure_broker,
)
from tests.integration.brokerd.test_quotas import SETTLE_S, ByteSampler

OVERRIDE, PLAN = 300_000, 600_000
RUN_S = 8.0


def test_a_principal_override_beats_its_tenant_plan_which_limits_the_others(
        zk_connect: str, zk: KazooClient, tmp_path: Path) -> None:
    control_plane.put(zk, znodes.tenant_znode("acme"), znodes.tenant_payload(
        name="acme", plan="test", status="active",
        quota_defaults={"producer_byte_rate": str(PLAN)}, max_partitions=10))
    secure = start_secure_broker(zk_connect, tmp_path)
    try:
        orders, billing = add_api_key(zk, "acme", "orders"), add_api_key(zk, "acme", "billing")
        # One ACL node per resource pattern holds every principal's entries.
        control_plane.put(zk, znodes.acl_znode("prefixed", "Topic", "acme."), znodes.acl_payload(
            [(key.principal, "All") for key in (orders, billing)]))
        control_plane.notify_acl_change(zk, ("PREFIXED", "Topic", "acme."))
        time.sleep(WATCH_PROPAGATION_S)
        set_quota(zk, "acme.orders", None, {"producer_byte_rate": OVERRIDE})
        for topic in ("acme.orders-in", "acme.billing-in"):
            create_topic(zk, topic, [1], [secure.process.bootstrap])
        stats = {"orders": PushStats(), "billing": PushStats()}

        def run(name: str, key: ApiKey) -> None:
            client = producer(secure.sasl_bootstrap, "app", stats[name],
                              {**confluent_auth(secure, key), "batch.size": 65536})
            push(client, f"{name}-in", RUN_S, stats[name])

        samplers = {name: ByteSampler(secure.process, "kafka_server_bytes_in_total",
                                      f"acme.{name}-in") for name in stats}
        clients = [threading.Thread(target=run, args=(name, key))
                   for name, key in (("orders", orders), ("billing", billing))]
        for sampler in samplers.values():
            sampler.__enter__()
        for client in clients:
            client.start()
        for client in clients:
            client.join()
        for sampler in samplers.values():
            sampler.__exit__()
    finally:
        secure.stop()
    for name, quota in (("orders", OVERRIDE), ("billing", PLAN)):
        rate = samplers[name].settled_rate(SETTLE_S)
        assert abs(rate - quota) <= 0.10 * quota, (name, rate)
        assert stats[name].throttle_events > 0 and stats[name].errors == []
