"""The controller's pushes (:mod:`brokerd.coordination.state_push`): who is sent what, in
requests of bounded size, several in flight per broker."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from brokerd.coordination import state_push
from brokerd.coordination.znodes import PartitionState, TopicMetadata
from brokerd.protocol import decode_request, encode_response

TOPIC_ID = uuid.uuid4()


def state(leader: int, version: int, isr: tuple[int, ...]) -> PartitionState:
    return PartitionState(leader, 1, isr, 1, version)


def test_each_broker_is_sent_the_partitions_it_hosts_in_bounded_requests(
        monkeypatch: pytest.MonkeyPatch) -> None:
    metadata = TopicMetadata("t", TOPIC_ID, {0: (1, 2), 1: (2, 3), 2: (3, 1)})
    written = {0: state(2, 1, (2,)), 1: state(3, 1, (3,)), 2: state(3, 1, (3,))}
    targets = state_push.targets(1, [(metadata, written)])
    assert {b: sorted(p for _, p in keys) for b, keys in targets.items()} == {
        2: [0, 1], 3: [1, 2]}  # never itself (broker 1), only replica hosts

    monkeypatch.setattr(state_push, "MAX_PARTITIONS", 1)
    pending = targets[3]
    assert list(state_push.take(pending)) == [("t", 1)]  # in written order
    assert list(pending) == [("t", 2)]


def test_states_are_taken_in_written_order_so_leader_changes_go_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A failover's leader changes are written first; ISR-only states written while every
    connection is busy gather behind them, even those of topics that sort earlier."""
    monkeypatch.setattr(state_push, "MAX_PARTITIONS", 2)
    late = TopicMetadata("z", TOPIC_ID, {0: (1, 2), 1: (1, 2)})
    early = TopicMetadata("a", TOPIC_ID, {0: (1, 2)})
    pending = state_push.targets(1, [(late, {0: state(2, 2, (2,)), 1: state(2, 2, (2,))})])[2]
    pending.update(state_push.targets(1, [(early, {0: state(1, 2, (1,))})])[2])
    pending.update(state_push.targets(1, [(late, {0: state(2, 3, (2,))})])[2])  # again
    taken = state_push.take(pending)
    assert list(taken) == [("z", 0), ("z", 1)] and taken[("z", 0)][1].zk_version == 3
    assert list(pending) == [("a", 0)]


def test_a_push_builds_no_request_for_a_broker_that_is_not_live(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """In a failover the dead broker hosts a replica of every partition it led: its
    requests are not even built."""
    built: list[set[tuple[str, int]]] = []
    real = state_push.take

    def recorded(pending: state_push.Pending) -> state_push.Pending:
        taken = real(pending)
        built.append(set(taken))
        return taken
    monkeypatch.setattr(state_push, "take", recorded)
    metadata = TopicMetadata("t", TOPIC_ID, {0: (1, 2), 1: (2, 3)})
    written = {0: state(1, 1, (1,)), 1: state(3, 1, (3,))}

    async def push() -> None:
        # Broker 2 is not registered; broker 3's port refuses at once (the push is dropped).
        pusher = state_push.StatePusher(
            1, lambda broker: None if broker == 2 else ("127.0.0.1", 1), 1.0)
        pusher.push(5, [(metadata, written)])
        for _ in range(100):
            await asyncio.sleep(0.01)
            if built:
                break
        pusher.close()
    asyncio.run(push())
    assert built == [{("t", 1)}]  # broker 3's only: broker 2 hosts 0 and 1 but is gone


def test_a_push_is_sent_while_an_earlier_one_awaits_its_answer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The receiver answers nothing until it holds two requests: with one request in flight
    per broker the second would wait for the first's answer, and neither would come."""
    monkeypatch.setattr(state_push, "MAX_PARTITIONS", 1)
    metadata = TopicMetadata("t", TOPIC_ID, {0: (1, 2), 1: (1, 2), 2: (1, 2)})
    written = {p: state(1, 1, (1, 2)) for p in range(3)}
    received: list[list[int]] = []

    async def scenario() -> None:
        two_held = asyncio.Event()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while True:
                try:
                    size = int.from_bytes(await reader.readexactly(4), "big")
                    header, body = decode_request(await reader.readexactly(size))
                except asyncio.IncompleteReadError:
                    return
                received.append([p["partition_index"] for t in body["topic_states"]
                                 for p in t["partition_states"]])
                if len(received) >= 2:
                    two_held.set()
                await two_held.wait()
                writer.writelines(encode_response(header, {"error_code": 0, "topics": []}))

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pusher = state_push.StatePusher(1, lambda broker: ("127.0.0.1", port), 30.0)
        pusher.push(3, [(metadata, written)])
        async with asyncio.timeout(5):
            while len(received) < 3:
                await asyncio.sleep(0.01)
        pusher.close()
        server.close()
    asyncio.run(scenario())
    assert sorted(p for request in received for p in request) == [0, 1, 2]
