"""The quota watch against a real ZooKeeper: every quota entity level and tenant plans reach
the sink, through data watches and through ``/config/changes`` notifications, including a
``clients`` node created under a user that had none."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from kazoo.client import KazooClient

from brokerd.coordination.quota_watch import QuotaWatch
from brokerd.coordination.security_watch import SecurityWatch
from tenants import znodes
from tenants import zookeeper as control_plane
from tests.integration.brokerd.quota_support import set_quota


class Sink:
    """Records what the watch posts (here posted synchronously, from any thread)."""

    def __init__(self) -> None:
        self.entities: dict[str, Mapping[str, object] | None] = {}
        self.plans: dict[str, Mapping[str, object] | None] = {}
        self.lock = threading.Lock()

    def quota_entity_changed(self, entity_path: str, config: Mapping[str, object] | None
                             ) -> None:
        with self.lock:
            self.entities[entity_path] = config

    def tenant_quota_defaults_changed(self, slug: str,
                                      quota_defaults: Mapping[str, object] | None) -> None:
        with self.lock:
            self.plans[slug] = quota_defaults

    # SecurityEvents: not under test here.
    def user_changed(self, *args: Any) -> None: ...

    def acl_changed(self, *args: Any) -> None: ...

    def tenant_changed(self, *args: Any) -> None: ...


def _eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not delivered in time"
        time.sleep(0.02)


def _start(zk: KazooClient) -> Sink:
    sink = Sink()
    worker_lock = threading.Lock()

    def submit(fn: Callable[..., None], *args: Any) -> None:
        # The broker runs these on one worker thread; a lock keeps them serialized here.
        def run() -> None:
            with worker_lock:
                fn(*args)
        threading.Thread(target=run, daemon=True).start()

    def post(fn: Callable[..., None], *args: Any) -> None:
        fn(*args)

    quotas = QuotaWatch(zk, sink, post, submit)
    security = SecurityWatch(zk, sink, post, submit, hook=quotas)
    with worker_lock:
        security.start()
        quotas.start(security)
    return sink


def test_every_level_and_tenant_plans_reach_the_sink(zk: KazooClient) -> None:
    set_quota(zk, "acme.orders", None, {"producer_byte_rate": 1000})
    set_quota(zk, "acme.orders", "app-1", {"consumer_byte_rate": 2000})
    set_quota(zk, None, "<default>", {"request_percentage": 50})
    control_plane.put(zk, znodes.tenant_znode("acme"), znodes.tenant_payload(
        name="acme", plan="p", status="active", quota_defaults={"producer_byte_rate": "5"},
        max_partitions=1))
    sink = _start(zk)
    _eventually(lambda: sink.entities.get("users/acme.orders/clients/app-1") is not None
                and "users/acme.orders" in sink.entities
                and "clients/<default>" in sink.entities and "acme" in sink.plans)
    assert sink.entities["users/acme.orders"] == {"producer_byte_rate": "1000"}
    assert sink.entities["clients/<default>"] == {"request_percentage": "50"}
    assert sink.plans["acme"] == {"producer_byte_rate": "5"}

    # Changes: a data watch or the notification delivers each within moments.
    set_quota(zk, None, "<default>", {"request_percentage": 75})
    _eventually(lambda: sink.entities["clients/<default>"] == {"request_percentage": "75"})
    set_quota(zk, "acme.orders", "app-1", None)
    _eventually(lambda: sink.entities["users/acme.orders/clients/app-1"] is None)
    # A user that had no clients node gets one: found through the notification.
    set_quota(zk, "beta.x", None, {"producer_byte_rate": 1})
    set_quota(zk, "beta.x", "job 7", {"producer_byte_rate": 3})
    _eventually(lambda: sink.entities.get("users/beta.x/clients/job%207")
                == {"producer_byte_rate": "3"})
    # ...and is watched from then on, without further notifications.
    zk.set("/config/users/beta.x/clients/job%207",
           znodes.config_payload({"producer_byte_rate": "4"}))
    _eventually(lambda: sink.entities["users/beta.x/clients/job%207"]
                == {"producer_byte_rate": "4"})
