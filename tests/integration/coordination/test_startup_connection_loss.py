"""A broker whose ZooKeeper connection drops while it starts.

Kafka's ZooKeeperClient re-sends its requests once it has reconnected, so a blip never
fails a broker's start; ours failed at 46 of the 57 requests of its start-up (found by
these tests, and seen in a full `make test` as a broker exiting on ``ConnectionLoss``).
A request whose answer is lost may still have taken effect: the broker's registration and,
the delicate one, its win of the controller election, which it must not mistake for a
loss (it would be named controller with nobody doing the work).
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from kazoo.client import KazooClient

from brokerd.coordination import znodes
from brokerd.coordination.reconnect import split_connect
from brokerd.coordination.zk import ZkCoordinator
from tests.integration.coordination.harness import Events, start_broker
from tests.support.zk_cut_proxy import ZkCutProxy

pytestmark = pytest.mark.integration


class IgnoredSecurityEvents:
    """The security and quota watches' sink; what they deliver is tested elsewhere."""

    def user_changed(self, api_key: str, data: bytes | None) -> None: ...

    def acl_changed(self, pattern_type: str, resource_type: str, quoted_name: str,
                    data: bytes | None) -> None: ...

    def tenant_changed(self, slug: str, data: bytes | None) -> None: ...

    def quota_entity_changed(self, entity_path: str, config: object) -> None: ...

    def tenant_quota_defaults_changed(self, slug: str, quota_defaults: object) -> None: ...


async def start_through(proxy: ZkCutProxy, chroot: str) -> tuple[ZkCoordinator, Events]:
    """Broker 1 started through ``proxy`` with the ZooKeeper steps of ``Broker.start``,
    once its start-up reads have run too."""
    coordinator, events = await asyncio.wait_for(
        start_broker(f"{proxy.address}{chroot}", 1), 60)
    ignored = IgnoredSecurityEvents()
    await coordinator.watch_security(ignored, ignored)
    await coordinator.watch_revoked_certificates(lambda serials: None)
    await coordinator.barrier()
    return coordinator, events


def start_up_requests(zk_connect: str) -> int:
    """How many requests a start-up (with its first reads) sends on its session's
    connection."""
    async def count() -> int:
        proxy = ZkCutProxy(split_connect(zk_connect)[0], 0, reply_lost=False)
        try:
            coordinator, _ = await start_through(proxy, split_connect(zk_connect)[1] + "/count")
            sent = proxy.requests_seen
            await coordinator.close()
            return sent
        finally:
            proxy.close()
    return asyncio.run(count())


async def assert_started_as_working_controller(coordinator: ZkCoordinator, events: Events,
                                               zk: KazooClient, chroot: str) -> None:
    """Registered under its own session, named controller, and acting as one: a new
    topic's partition gets its first leader."""
    session = coordinator._client.client_id[0]
    _, stat = zk.get(f"{chroot}{znodes.broker_path(1)}")
    assert stat.ephemeralOwner == session
    _, stat = zk.get(f"{chroot}{znodes.CONTROLLER}")
    assert stat.ephemeralOwner == session
    await events.until(lambda: events.controller == 1, timeout=30)
    await coordinator.create_topic("t", {0: (1,)}, {}, uuid.uuid4())
    await events.until(lambda: 0 in getattr(events.topics.get("t"), "states", {}), timeout=30)
    assert events.topic("t").states[0].leader == 1


# Every request with its answer lost (the step took effect, then must be repeated safely);
# every fifth before ZooKeeper sees it (the same repetition, of a step that did not run).
@pytest.mark.parametrize(("reply_lost", "stride"), [(True, 1), (False, 5)],
                         ids=["reply-lost", "request-lost"])
def test_a_connection_cut_at_any_start_up_request_does_not_fail_the_start(
        zk_connect: str, zk: KazooClient, reply_lost: bool, stride: int) -> None:
    """The session's connection is cut once at each request of the start-up in turn:
    after ZooKeeper carried it out with its answer lost, or before ZooKeeper sees it."""
    zookeeper, base = split_connect(zk_connect)
    total = start_up_requests(zk_connect)
    assert total > 20, total  # the count saw the start-up

    async def scenario() -> None:
        for cut_at in range(1, total + 1, stride):
            chroot = f"{base}/cut-{cut_at}"
            proxy = ZkCutProxy(zookeeper, cut_at, reply_lost)
            try:
                coordinator, events = await start_through(proxy, chroot)
                try:
                    assert proxy.cut.is_set(), f"request {cut_at} was never sent"
                    await assert_started_as_working_controller(
                        coordinator, events, zk, chroot.removeprefix(base))
                finally:
                    await coordinator.close()
            finally:
                proxy.close()

    asyncio.run(scenario())
