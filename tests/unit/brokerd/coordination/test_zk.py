"""ZkCoordinator against the session's real ZooKeeper (a private chroot per test)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
import uuid

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss

from brokerd.coordination import znodes
from brokerd.coordination.writes import TopicExistsError
from brokerd.coordination.zk import ZkCoordinator
from brokerd.coordination.zk_await import CoordinationUnavailableError
from brokerd.coordination.znodes import BrokerRegistration
from tests.integration.coordination.harness import Events


def coordinator(connect: str, broker_id: int, events: Events, port: int = 9092
                ) -> ZkCoordinator:
    registration = BrokerRegistration(broker_id, "127.0.0.1", port,
                                      (f"PLAINTEXT://127.0.0.1:{port}",))
    return ZkCoordinator(connect, registration, events, asyncio.get_running_loop(),
                         session_timeout_s=6)


def test_register_elect_create_and_delete_topics(zk_connect: str, zk: KazooClient) -> None:
    async def scenario() -> None:
        events = Events()
        first = coordinator(zk_connect + "/nested", 1, events)
        await first.start()
        await events.until(lambda: 1 in events.brokers and events.controller == 1)
        assert first.is_controller and first.cluster_id
        await first.create_topic("t", {0: (1,), 1: (1,)}, {"retention.ms": "5"}, uuid.uuid4())
        await events.until(lambda: events.topics.get("t") is not None
                           and len(events.topics["t"].states) == 2)  # type: ignore[union-attr]
        metadata = events.topics["t"]
        assert metadata is not None and metadata.config == {"retention.ms": "5"}
        assert metadata.states[1].leader == 1 and metadata.states[1].isr == (1,)
        try:
            await first.create_topic("t", {0: (1,)}, {}, uuid.uuid4())
            raise AssertionError("duplicate create must fail")
        except TopicExistsError:
            pass
        await first.set_topic_config("t", {"retention.ms": "9"})
        await events.until(lambda: events.topics["t"].config == {  # type: ignore[union-attr]
            "retention.ms": "9"})
        await first.set_partitions("t", {2: (1,)})
        await events.until(lambda: len(events.topics["t"].states) == 3)  # type: ignore
        await first.delete_topic("t")
        await events.until(lambda: events.topics["t"] is None)
        await first.close()

    asyncio.run(scenario())
    nested = "/nested"
    assert zk.exists(nested + "/brokers/ids/1") is None  # deregistered on close
    assert json.loads(zk.get(nested + "/controller_epoch")[0]) == 1


def test_a_write_whose_caller_gave_up_in_the_queue_still_happens(zk_connect: str,
                                                                  zk: KazooClient) -> None:
    """A CreateTopics of many topics queues their writes on the one ZooKeeper thread; a
    write still queued when its caller's timeout ran out used to be cancelled (the topic
    never created, unlike the ones already running)."""
    async def scenario() -> None:
        events = Events()
        broker = coordinator(zk_connect + "/late", 1, events)
        await broker.start()
        gate = threading.Event()
        broker._worker.submit(gate.wait)  # the thread busy with earlier work
        try:
            await broker.create_topic("late", {0: (1,)}, {}, uuid.uuid4(), timeout=0.1)
            raise AssertionError("the caller must have given up")
        except CoordinationUnavailableError as exc:
            assert "no answer in 0.1s" in str(exc)
        finally:
            gate.set()
        await events.until(lambda: events.topics.get("late") is not None)
        await broker.close()

    asyncio.run(scenario())
    assert zk.exists("/late/brokers/topics/late") is not None


def test_topics_written_by_others_are_picked_up(zk_connect: str, zk: KazooClient) -> None:
    async def scenario() -> None:
        events = Events()
        broker = coordinator(zk_connect, 1, events)
        await broker.start()
        assignment = znodes.TopicAssignment(uuid.uuid4(), {0: (1,)})
        zk.create("/brokers/topics/external", assignment.encode())
        await events.until(lambda: events.topics.get("external") is not None
                           and 0 in events.topics["external"].states)  # type: ignore
        # a request through /admin/delete_topics is executed by the controller
        zk.create("/admin/delete_topics/external")
        await events.until(lambda: events.topics["external"] is None)
        await broker.close()

    asyncio.run(scenario())
    assert zk.exists("/admin/delete_topics/external") is None


def test_second_broker_and_stale_registration(zk_connect: str, zk: KazooClient) -> None:
    stale = BrokerRegistration(2, "127.0.0.1", 9093, ("PLAINTEXT://127.0.0.1:9093",))
    other = KazooClient(hosts=zk_connect)
    other.start()
    other.create("/brokers/ids/2", stale.encode(0), ephemeral=True, makepath=True)

    async def scenario() -> list[znodes.ProducerIdBlock]:
        events_1, events_2 = Events(), Events()
        first = coordinator(zk_connect, 1, events_1)
        await first.start()
        # broker 2's crashed predecessor still holds the node: same endpoints -> replaced
        second = coordinator(zk_connect, 2, events_2, port=9093)
        await second.start()
        await events_1.until(lambda: set(events_1.brokers) == {1, 2})
        assert events_2.controller == 1 and not second.is_controller
        blocks = [await first.allocate_producer_id_block(),
                  await second.allocate_producer_id_block(),
                  await first.allocate_producer_id_block()]
        await first.close()
        await events_2.until(lambda: events_2.controller == 2)  # failover of the controller
        await second.close()
        return blocks

    blocks = asyncio.run(scenario())
    other.stop()
    assert [(b.broker_id, b.start) for b in blocks] == [(1, 0), (2, 1000), (1, 2000)]


async def expire_and_await_reregistration(broker: ZkCoordinator, zk_connect: str,
                                          zk: KazooClient) -> None:
    """End the broker's session (kazoo's test-harness trick: a second client on the same
    session id closes it) and wait until it has registered again under a new one."""
    path = f"/brokers/ids/{broker.broker_id}"
    old_owner = zk.exists(path).ephemeralOwner
    session_id, password = broker._client.client_id
    thief = KazooClient(hosts=zk_connect.split("/")[0], client_id=(session_id, password))
    thief.start()
    thief.stop()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while (stat := zk.exists(path)) is None or stat.ephemeralOwner == old_owner:
        assert loop.time() < deadline, "broker did not re-register"
        await asyncio.sleep(0.1)


def test_reregisters_after_session_expiry(zk_connect: str, zk: KazooClient) -> None:
    async def scenario() -> None:
        events = Events()
        broker = coordinator(zk_connect, 1, events)
        await broker.start()
        await expire_and_await_reregistration(broker, zk_connect, zk)
        await events.until(lambda: events.controller == 1)
        await broker.close()

    asyncio.run(scenario())


def test_a_broker_whose_session_expired_still_sees_new_partition_states(
        zk_connect: str, zk: KazooClient) -> None:
    """The state watch is per session: after a new one, states created later (here by the
    other broker's controller, which pushes nothing in this harness) still arrive."""
    async def scenario() -> None:
        controller_events, events = Events(), Events()
        controller = coordinator(zk_connect, 1, controller_events)
        await controller.start()
        broker = coordinator(zk_connect, 2, events, port=9093)
        await broker.start()
        await expire_and_await_reregistration(broker, zk_connect, zk)
        await broker.barrier()
        await controller.create_topic("late", {0: (1, 2), 1: (2, 1)}, {}, uuid.uuid4())
        await events.until(lambda: len(getattr(events.topics.get("late"), "states", {})) == 2)
        await broker.close()
        await controller.close()

    asyncio.run(scenario())


class CuttableProxy:
    """A TCP proxy to ZooKeeper whose connections a test can cut, as a network blip would:
    the client sees its connection drop and reconnects within its session."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self.open += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        for connection in self.open:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self.open = []

    def close(self) -> None:
        self.listener.close()
        self.cut()


def test_partition_changes_still_arrive_after_a_connection_loss(zk_connect: str,
                                                                zk: KazooClient) -> None:
    """kazoo drops every watch when its connection drops (it sends them a NONE event and
    does not restore them on reconnect), even though the session survives: a broker must
    re-arm its watches then, or it keeps serving stale leaders for good (found by a chaos
    run: after a ZooKeeper quorum loss one broker told clients a leader that no longer led),
    and would never notice the controller's loss again."""
    hosts, chroot = zk_connect.split("/", 1)
    host, port = hosts.split(",")[0].rsplit(":", 1)
    proxy = CuttableProxy((host, int(port)))

    async def scenario() -> None:
        events = Events()
        broker = coordinator(f"127.0.0.1:{proxy.port}/{chroot}", 1, events)
        await broker.start()
        assignment = znodes.TopicAssignment(uuid.uuid4(), {0: (1,)})
        zk.create("/brokers/topics/t", assignment.encode())
        await events.until(lambda: events.topics.get("t") is not None
                           and 0 in events.topics["t"].states)  # type: ignore[union-attr]
        session = broker._client.client_id
        proxy.cut()
        await asyncio.sleep(0.5)
        await events.until(lambda: broker._client.connected
                           and broker._client.client_id == session)
        state_path = "/brokers/topics/t/partitions/0/state"
        state = json.loads(zk.get(state_path)[0])
        zk.set(state_path, json.dumps({**state, "leader_epoch": 7}).encode())
        await events.until(lambda: events.topics["t"].states[0].leader_epoch == 7,  # type: ignore
                           timeout=10)
        zk.create("/brokers/topics/later", assignment.encode())  # the topic list is watched
        await events.until(lambda: 0 in getattr(events.topics.get("later"), "states", {}))
        zk.delete("/controller")  # the /controller watch is back too: it runs again and wins
        for _ in range(100):
            if zk.exists("/controller") is not None:
                break
            await asyncio.sleep(0.1)
        assert zk.exists("/controller") is not None, "the broker missed /controller's loss"
        await broker.close()

    try:
        asyncio.run(scenario())
    finally:
        proxy.close()


def test_a_task_cut_short_by_a_blip_is_a_warning_and_any_other_failure_an_error(
        caplog: pytest.LogCaptureFixture) -> None:
    """During a ZooKeeper blip queued tasks fail by the dozen and the reconnection redoes
    them: one warning line each, no traceback; anything else stays an error."""
    def blip() -> None:
        raise ConnectionLoss()

    def bug() -> None:
        raise KeyError("x")

    with caplog.at_level(logging.WARNING, logger="brokerd.coordination.zk"):
        ZkCoordinator._logged(blip)
        ZkCoordinator._logged(bug)
    [cut, failed] = caplog.records
    assert (cut.levelno, cut.exc_info) == (logging.WARNING, None)
    assert "blip cut short" in cut.getMessage()
    assert failed.levelno == logging.ERROR and failed.exc_info is not None
