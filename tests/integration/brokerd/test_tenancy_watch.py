"""SecurityWatch against a real ZooKeeper: users, ACLs (found through two levels of child
watches) and tenants reach the sink as raw bytes, deletions as None, and change
notifications re-read the node they name."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from kazoo.client import KazooClient

from brokerd.coordination.security_watch import SecurityWatch
from tenants import znodes
from tenants import zookeeper as control_plane
from tests.integration.brokerd.tenancy_fixtures import wait_for


class _Sink:
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self._lock = threading.Lock()

    def record(self, *event: Any) -> None:
        with self._lock:
            self.events.append(event)

    def user_changed(self, api_key: str, data: bytes | None) -> None:
        self.record("user", api_key, data)

    def acl_changed(self, pattern: str, resource_type: str, name: str,
                    data: bytes | None) -> None:
        self.record("acl", pattern, resource_type, name, data)

    def tenant_changed(self, slug: str, data: bytes | None) -> None:
        self.record("tenant", slug, data)

    def seen(self, *prefix: Any) -> Callable[[], bool]:
        return lambda: any(event[:len(prefix)] == prefix for event in list(self.events))


@pytest.fixture
def watched(zk: KazooClient) -> Iterator[_Sink]:
    sink = _Sink()
    worker = ThreadPoolExecutor(1)

    def post(fn: Callable[..., None], *args: Any) -> None:
        fn(*args)

    def submit(fn: Callable[..., None], *args: Any) -> None:
        worker.submit(fn, *args)

    worker.submit(SecurityWatch(zk, sink, post, submit).start).result(timeout=10)
    yield sink
    worker.shutdown(wait=True)


def test_users_acls_and_tenants_reach_the_sink(zk: KazooClient, watched: _Sink) -> None:
    user = znodes.config_payload({"principal": "acme.app", "tenant": "acme"})
    control_plane.put_config(zk, "users/KEY1", {"principal": "acme.app", "tenant": "acme"})
    wait_for(watched.seen("user", "KEY1", user))
    control_plane.put_config(zk, "users/KEY1", None)
    wait_for(watched.seen("user", "KEY1", None))

    acl = znodes.acl_payload([("acme.app", "Read")])
    control_plane.put(zk, znodes.acl_znode("prefixed", "Topic", "acme."), acl)
    wait_for(watched.seen("acl", "prefixed", "Topic", "acme.", acl))
    control_plane.remove(zk, znodes.acl_znode("prefixed", "Topic", "acme."))
    wait_for(watched.seen("acl", "prefixed", "Topic", "acme.", None))

    control_plane.put(zk, znodes.tenant_znode("acme"), b'{"max_partitions":3}')
    wait_for(watched.seen("tenant", "acme", b'{"max_partitions":3}'))


def test_a_notification_rereads_the_node_it_names(zk: KazooClient, watched: _Sink) -> None:
    control_plane.put_config(zk, "users/KEY2", {"principal": "acme.two", "tenant": "acme"})
    wait_for(watched.seen("user", "KEY2"))
    before = sum(1 for event in watched.events if event[:2] == ("user", "KEY2"))
    control_plane.notify_change(zk, "users/KEY2")  # no data change: only the notification
    wait_for(lambda: sum(1 for e in watched.events if e[:2] == ("user", "KEY2")) > before)
    literal = znodes.acl_znode("literal", "Group", "acme.g")
    control_plane.put(zk, literal, znodes.acl_payload([("acme.two", "Read")]))
    wait_for(watched.seen("acl", "literal", "Group"))
    count = len(watched.events)
    control_plane.notify_acl_change(zk, ("LITERAL", "Group", "acme.g"))
    wait_for(lambda: len(watched.events) > count)
    assert watched.events[-1][:4] == ("acl", "literal", "Group", "acme.g")


def test_expired_notifications_are_purged(zk: KazooClient, watched: _Sink,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's rule: readers delete notifications older than 15 minutes, so the lists do
    not grow without bound (here every notification is already expired)."""
    monkeypatch.setattr("brokerd.coordination.security_watch.CHANGE_EXPIRATION_MS", -1000)
    control_plane.put_config(zk, "users/KEY3", {"principal": "acme.three", "tenant": "acme"})
    control_plane.notify_acl_change(zk, ("LITERAL", "Group", "acme.g"))
    wait_for(watched.seen("user", "KEY3"))
    control_plane.notify_change(zk, "users/KEY3")  # handled after the first: purges both
    control_plane.notify_acl_change(zk, ("LITERAL", "Group", "acme.g"))
    wait_for(lambda: not zk.get_children("/config/changes")
             and not zk.get_children("/acls/changes"))
