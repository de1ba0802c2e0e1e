"""The state watch against real ZooKeeper through the broker's buffered sockets: a burst of
notifications, most of them taken straight from the connection's buffer, is reported
whole and in order, keeps every node's version exact, and leaves kazoo's own one-shot
watches and answers working in between."""

from __future__ import annotations

import threading
import time

import pytest
from kazoo.client import KazooClient

from brokerd.coordination import znodes
from brokerd.coordination.state_watch import StateWatch
from brokerd.coordination.zk_handler import BufferedSocket
from brokerd.coordination.znodes import PartitionState

PARTITIONS = 600
ROUNDS = 3
TRANSACTION = 100  # states per ZooKeeper transaction, as the controller writes


def test_a_burst_of_notifications_is_reported_whole_in_order_with_exact_versions(
        buffered_zk: KazooClient, zk: KazooClient, monkeypatch: pytest.MonkeyPatch) -> None:
    zk.ensure_path(znodes.partition_state_path("burst", 0).rsplit("/", 2)[0])
    transaction = zk.transaction()
    for partition in range(PARTITIONS):
        transaction.create(znodes.partition_state_path("burst", partition).rsplit("/", 1)[0])
        transaction.create(znodes.partition_state_path("burst", partition),
                           PartitionState(1, 0, (1,)).encode())
    assert not any(isinstance(result, Exception) for result in transaction.commit())
    taken = 0
    take = BufferedSocket.take_buffered_message

    def counting_take(sock: BufferedSocket, xid: int) -> bytes | None:
        nonlocal taken
        message = take(sock, xid)
        taken += message is not None
        return message

    monkeypatch.setattr(BufferedSocket, "take_buffered_message", counting_take)
    reported: list[tuple[int, bool]] = []
    lock = threading.Lock()

    def on_change(topic: str, partition: int, changed: bool) -> None:
        assert topic == "burst"
        with lock:
            reported.append((partition, changed))

    watch = StateWatch(buffered_zk, on_change)
    watch.add()
    for partition in range(PARTITIONS):  # every version known, as after a topic's read
        watch.read_async("burst", partition).get(timeout=10)
    one_shot = threading.Event()
    watched = znodes.partition_state_path("burst", PARTITIONS // 2)
    buffered_zk.get(watched, watch=lambda _event: one_shot.set())

    for round_ in range(1, ROUNDS + 1):  # another session writes, as the controller does
        for start in range(0, PARTITIONS, TRANSACTION):
            transaction = zk.transaction()
            for partition in range(start, start + TRANSACTION):
                transaction.set_data(znodes.partition_state_path("burst", partition),
                                     PartitionState(1, round_, (1,)).encode())
            assert not any(isinstance(result, Exception) for result in transaction.commit())
    deadline = time.monotonic() + 30
    while len(reported) < PARTITIONS * ROUNDS and time.monotonic() < deadline:
        time.sleep(0.01)

    assert reported == [(p, True) for _ in range(ROUNDS) for p in range(PARTITIONS)]
    assert taken > 0  # the burst went through the buffer, not message by message only
    assert one_shot.wait(10)  # kazoo still hands its own watches their events
    assert buffered_zk.exists(watched) is not None  # and its answers to their callers
    for partition in (0, PARTITIONS // 2, PARTITIONS - 1):
        assert watch.covered("burst", partition, ROUNDS)
        assert not watch.covered("burst", partition, ROUNDS - 1)
