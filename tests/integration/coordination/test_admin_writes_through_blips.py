"""A client's topic write (CreateTopics, CreatePartitions, AlterConfigs, DeleteTopics) whose
ZooKeeper connection drops mid-way: the broker repeats it once reconnected, as Kafka's
ZooKeeperClient re-sends its requests, so the client gets its answer late rather than
REQUEST_TIMED_OUT.  A repeated creation whose first answer was lost finds its own topic
id and succeeds (Kafka would answer TOPIC_ALREADY_EXISTS for the client's own topic)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_acl

from brokerd.coordination import security_writes, writes, znodes
from brokerd.coordination.reconnect import split_connect, through_blips
from brokerd.coordination.znodes import TopicAssignment
from tests.integration.coordination.harness import read_state, start_broker
from tests.support.zk_cut_proxy import ZkCutProxy, client_through_proxy

pytestmark = pytest.mark.integration

CONFIG = {"retention.ms": "1000"}
NEW_CONFIG = {"retention.ms": "2000", "cleanup.policy": "compact"}


def assignment(topic_id: uuid.UUID, partitions: int) -> TopicAssignment:
    return TopicAssignment(topic_id, {p: (1,) for p in range(partitions)})


def create(client: KazooClient, name: str, topic_id: uuid.UUID) -> None:
    writes.create_topic(client, name, assignment(topic_id, 1), CONFIG)


def grow(client: KazooClient, name: str, _: uuid.UUID) -> None:
    writes.add_partitions(client, name, {1: (1,), 2: (1,)})


def configure(client: KazooClient, name: str, _: uuid.UUID) -> None:
    writes.set_or_create(client, znodes.topic_config_path(name),
                         znodes.encode_topic_config(NEW_CONFIG))


def delete(client: KazooClient, name: str, _: uuid.UUID) -> None:
    writes.delete_topic(client, name)


def created(zk: KazooClient, name: str, topic_id: uuid.UUID) -> bool:
    data, _ = zk.get(znodes.topic_path(name))
    config, _ = zk.get(znodes.topic_config_path(name))
    return (TopicAssignment.decode(name, data) == assignment(topic_id, 1)
            and znodes.decode_topic_config(config) == CONFIG)


def grown(zk: KazooClient, name: str, topic_id: uuid.UUID) -> bool:
    data, _ = zk.get(znodes.topic_path(name))
    return TopicAssignment.decode(name, data) == assignment(topic_id, 3)


def configured(zk: KazooClient, name: str, _: uuid.UUID) -> bool:
    config, _ = zk.get(znodes.topic_config_path(name))
    return znodes.decode_topic_config(config) == NEW_CONFIG


def deleted(zk: KazooClient, name: str, _: uuid.UUID) -> bool:
    return (zk.exists(znodes.topic_path(name)) is None
            and zk.exists(znodes.topic_config_path(name)) is None)


Step = Callable[[KazooClient, str, uuid.UUID], object]
# Each write, what it must leave, and the writes that prepare its topic.
WRITES: list[tuple[Step, Callable[[KazooClient, str, uuid.UUID], bool], list[Step]]] = [
    (create, created, []), (grow, grown, [create]), (configure, configured, [create]),
    (delete, deleted, [create, grow])]


@pytest.fixture
def through_proxy(zk_connect: str, zk: KazooClient) -> Iterator[tuple[KazooClient, ZkCutProxy]]:
    """A plain client (no watches, so no requests but the writes') through a cut proxy,
    in the test's chroot."""
    zk.ensure_path(znodes.TOPICS)  # as in a running cluster, so the first write is no
    zk.ensure_path(znodes.topic_config_path("x").rsplit("/", 1)[0])  # longer than others
    with client_through_proxy(zk_connect) as connected:
        yield connected


@pytest.mark.parametrize("reply_lost", [True, False], ids=["reply-lost", "request-lost"])
def test_topic_writes_cut_at_any_request_complete_once_reconnected(
        through_proxy: tuple[KazooClient, ZkCutProxy], zk: KazooClient,
        reply_lost: bool) -> None:
    """Each write is cut once at each of its requests in turn (after ZooKeeper carried it
    out with the answer lost, or before ZooKeeper saw it), on a topic of its own: repeated
    as the broker repeats it, every one completes without an error and leaves what an
    uncut one leaves."""
    client, proxy = through_proxy
    for write, check, preparations in WRITES:
        name, topic_id = f"counted-{write.__name__}", uuid.uuid4()
        for prepare in preparations:
            prepare(client, name, topic_id)
        proxy.arm(0, reply_lost)
        write(client, name, topic_id)
        requests = proxy.requests_seen
        assert requests >= 1 and check(zk, name, topic_id), (write.__name__, requests)
        for cut_at in range(1, requests + 1):
            name, topic_id = f"{write.__name__}-{cut_at}", uuid.uuid4()
            for prepare in preparations:
                prepare(client, name, topic_id)
            proxy.arm(cut_at, reply_lost)
            through_blips(30)(write, client, name, topic_id)
            assert proxy.cut.is_set(), f"{write.__name__}: request {cut_at} was never sent"
            assert check(zk, name, topic_id), f"{write.__name__} cut at request {cut_at}"


def test_a_topic_created_by_the_broker_through_a_blip_gets_its_leader(
        zk_connect: str, zk: KazooClient) -> None:
    """The broker's own CreateTopics write, its topic node's creation answered into a cut
    connection: the broker finds its own topic id, reports success, and elects the
    leader; a creation of the same name with another id is still refused."""
    zookeeper, base = split_connect(zk_connect)
    chroot = f"{base}/broker-blip"

    async def scenario() -> None:
        proxy = ZkCutProxy(zookeeper)
        coordinator, events = await asyncio.wait_for(
            start_broker(f"{proxy.address}{chroot}", 1), 60)
        try:
            await events.until(lambda: events.controller == 1, timeout=30)
            await coordinator.barrier()
            proxy.arm(0, reply_lost=True)
            await coordinator.create_topic("counted", {0: (1,)}, CONFIG, uuid.uuid4())
            # The creation's own requests come first on an idle broker; its last one
            # creates the topic's node (the broker's reactions follow it).
            last = len(["get", "set config", "create config", "create topic"])
            await events.until(lambda: 0 in getattr(events.topics.get("counted"), "states", {}),
                               timeout=30)
            await coordinator.barrier()
            topic_id = uuid.uuid4()
            proxy.arm(last, reply_lost=True)
            await asyncio.wait_for(coordinator.create_topic("t", {0: (1,)}, CONFIG, topic_id),
                                   30)
            assert proxy.cut.is_set()
            data, _ = zk.get(f"{chroot.removeprefix(base)}{znodes.topic_path('t')}")
            assert TopicAssignment.decode("t", data).topic_id == topic_id
            await events.until(lambda: 0 in getattr(events.topics.get("t"), "states", {}),
                               timeout=30)
            assert events.topic("t").states[0].leader == 1
            with pytest.raises(writes.TopicExistsError):
                await coordinator.create_topic("t", {0: (1,)}, CONFIG, uuid.uuid4())
        finally:
            await coordinator.close()
            proxy.close()

    asyncio.run(scenario())


def add_rule(data: bytes | None) -> bytes | None:
    return (data or b"") + b"+rule"


def drop_rules(data: bytes | None) -> bytes | None:
    return None


@pytest.mark.parametrize("reply_lost", [True, False], ids=["reply-lost", "request-lost"])
def test_security_writes_cut_at_any_request_report_their_own_change_once_announced(
        through_proxy: tuple[KazooClient, ZkCutProxy], zk: KazooClient,
        reply_lost: bool) -> None:
    """An ACL node's read-modify-write (CreateAcls adding a rule, DeleteAcls removing the
    last), cut once at each of its requests in turn: it completes, reports the change it
    made (not "nothing to do", which a repeat that asked the change again would find),
    and the node's change notification is written exactly once (with the node, in one
    transaction: never lost between them)."""
    client, proxy = through_proxy
    changes = "/acls/changes"
    zk.ensure_path(changes)
    zk.ensure_path("/acls/literal/Topic")  # as in a running cluster

    def write(name: str, change: security_writes.Change, cut_at: int) -> tuple[object, int]:
        path = f"/acls/literal/Topic/{name}"
        if change is drop_rules:
            security_writes.update_node(client, path, add_rule, f"{changes}/acl_changes_", b"{}",
                                        30)
        before = len(zk.get_children(changes))
        proxy.arm(cut_at, reply_lost)
        outcome = security_writes.update_node(client, path, change, f"{changes}/acl_changes_",
                                              b"{}", 30)
        assert cut_at == 0 or proxy.cut.is_set(), f"request {cut_at} was never sent"
        assert zk.exists(path) is None if change is drop_rules else zk.get(path)[0] == b"+rule"
        return outcome, len(zk.get_children(changes)) - before

    for change, expected in ((add_rule, (None, b"+rule")), (drop_rules, (b"+rule", None))):
        assert write(f"counted-{change.__name__}", change, 0) == (expected, 1)
        for cut_at in range(1, proxy.requests_seen + 1):
            assert write(f"{change.__name__}-{cut_at}", change, cut_at) == (expected, 1), (
                change.__name__, cut_at)


def test_a_security_write_zookeeper_refuses_fails_instead_of_trying_forever(
        zk: KazooClient) -> None:
    """Only a race (the node's version moved, it appeared or went) is read again and
    retried; a refusal that would fail every time (here a node this client may only
    read) is raised to the request at once."""
    zk.ensure_path("/acls/changes")
    path = "/acls/literal/Topic/read-only"
    zk.ensure_path(path.rsplit("/", 1)[0])
    zk.create(path, b"+rule", acl=[make_acl("world", "anyone", read=True)])
    with pytest.raises(NoAuthError):
        security_writes.update_node(zk, path, add_rule, "/acls/changes/acl_changes_", b"{}", 5)
    assert zk.get(path)[0] == b"+rule" and zk.get_children("/acls/changes") == []


@pytest.mark.parametrize("reply_lost", [True, False], ids=["reply-lost", "request-lost"])
def test_producer_id_blocks_claimed_through_a_blip_are_never_shared(
        through_proxy: tuple[KazooClient, ZkCutProxy], zk: KazooClient,
        reply_lost: bool) -> None:
    """InitProducerId's block claim, cut at each of its requests in turn: it completes,
    with the block ZooKeeper records as the latest (a claim whose answer was lost leaves
    its block unused; the repeat takes the next one, never an earlier one)."""
    client, proxy = through_proxy
    proxy.arm(0, reply_lost)
    previous = writes.claim_producer_id_block(client, 1)
    requests = proxy.requests_seen
    for cut_at in range(1, requests + 1):
        proxy.arm(cut_at, reply_lost)
        block = through_blips(30)(writes.claim_producer_id_block, client, 1)
        assert proxy.cut.is_set(), f"request {cut_at} was never sent"
        stored, _ = zk.get(znodes.PRODUCER_ID_BLOCK)
        assert znodes.ProducerIdBlock.decode(stored) == block
        assert block.start > previous.end
        previous = block


@pytest.mark.parametrize(("cut_at", "reply_lost"), [(1, True), (1, False), (2, True)],
                         ids=["request-answer-lost", "request-unsent", "poll-answer-lost"])
def test_a_controlled_shutdown_cut_by_a_blip_still_moves_every_leadership(
        zk_connect: str, zk: KazooClient, cut_at: int, reply_lost: bool) -> None:
    """The leaving broker's connection is cut at its shutdown request or at its first poll
    for the controller's answer: the shutdown still completes (it used to give up, and the
    broker then left without handing its leaderships on)."""
    zookeeper, chroot = split_connect(zk_connect)
    replicas = {p: tuple((p + r) % 3 + 1 for r in range(3)) for p in range(6)}

    async def scenario() -> None:
        proxy = ZkCutProxy(zookeeper)
        others = [await start_broker(zk_connect, b) for b in (1, 3)]
        (controller, events), _ = others
        leaving, seen = await start_broker(f"{proxy.address}{chroot}", 2)
        try:
            await events.until(lambda: set(events.brokers) == {1, 2, 3})
            assert controller.is_controller and not leaving.is_controller
            await controller.create_topic("t", replicas, {}, uuid.uuid4())
            await seen.until(lambda: len(getattr(seen.topics.get("t"), "states", {})) == 6)
            await asyncio.sleep(0.5)  # the leaving broker's own reads of the new topic done
            await leaving.barrier()
            proxy.arm(cut_at, reply_lost)
            assert await leaving.controlled_shutdown(20.0)
            assert proxy.cut.is_set()
            states = [read_state(zk, "t", p) for p in range(6)]
            assert all(s.leader != 2 and 2 not in s.isr for s in states), states
        finally:
            for coordinator, _ in [*others, (leaving, None)]:
                await coordinator.close()
            proxy.close()

    asyncio.run(scenario())
