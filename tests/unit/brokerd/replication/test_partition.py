"""Partition roles on real logs: leader high watermark, ISR proposals, acks=all waits,
follower appends and truncation, epochs that never go back."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from brokerd.coordination.znodes import PartitionState
from brokerd.protocol.records import build_batch, parse_batch_header
from brokerd.replication.manager import ReplicaManager
from brokerd.replication.partition import NO_LEADER, Partition
from brokerd.storage import LogConfig, LogManager

TOPIC_ID = uuid.uuid4()


def records(*values: bytes) -> memoryview:
    return memoryview(build_batch([(None, v, [], 1_700_000_000_000) for v in values]))


def leader(tmp_path: Path, isr: tuple[int, ...] = (1, 2, 3), epoch: int = 4,
           now_ms: int = 0) -> Partition:
    log = LogManager([tmp_path], LogConfig()).get_or_create("t", 0, LogConfig())
    partition = Partition("t", 0, TOPIC_ID, log, broker_id=1)
    assert partition.become_leader(epoch, isr, (1, 2, 3), zk_version=7, now_ms=now_ms)
    return partition


def test_leader_commits_only_what_every_isr_member_fetched(tmp_path: Path) -> None:
    partition = leader(tmp_path)
    woken: list[int] = []
    partition.add_listener(False, lambda: woken.append(partition.high_watermark))
    partition.append_as_leader(records(b"a", b"b", b"c"))
    assert (partition.log_end_offset, partition.high_watermark, woken) == (3, 0, [])
    partition.record_follower_fetch(2, 3, now_ms=10)
    assert partition.high_watermark == 0
    partition.record_follower_fetch(3, 2, now_ms=10)
    assert (partition.high_watermark, woken) == (2, [2])
    partition.record_follower_fetch(3, 1, now_ms=20)  # a lower fetch never moves it back
    assert partition.high_watermark == 2
    assert partition.log.leader_epoch_cache.latest_epoch == 4


def test_a_single_replica_commits_on_append(tmp_path: Path) -> None:
    partition = leader(tmp_path, isr=(1,))
    partition.append_as_leader(records(b"a"))
    assert partition.high_watermark == 1


def test_acks_all_waits_complete_on_commit_and_fail_on_leadership_loss(tmp_path: Path
                                                                         ) -> None:
    async def scenario() -> tuple[bool, bool, bool]:
        partition = leader(tmp_path)
        first = partition.append_as_leader(records(b"a"))
        second = partition.append_as_leader(records(b"b"))
        committed = partition.wait_for_commit(first.last_offset)
        pending = partition.wait_for_commit(second.last_offset)
        partition.record_follower_fetch(2, 1, 5)
        partition.record_follower_fetch(3, 1, 5)
        await asyncio.sleep(0)
        assert committed.done() and not pending.done()
        assert partition.become_follower(2, 5, (1, 2, 3), (2, 3), 8)
        already = partition.wait_for_commit(0)  # committed before: answers at once
        return committed.result(), pending.result(), already.result()

    assert asyncio.run(scenario()) == (True, False, True)


def test_isr_shrinks_after_the_lag_time_and_expands_when_caught_up(tmp_path: Path) -> None:
    partition = leader(tmp_path, isr=(1, 2, 3), now_ms=0)
    partition.append_as_leader(records(b"a", b"b"))
    partition.record_follower_fetch(2, 2, now_ms=1500)
    assert partition.begin_isr_change(1900, 2000) is None
    assert partition.begin_isr_change(2500, 2000) == (1, 2)  # 3 never fetched
    assert partition.begin_isr_change(2600, 2000) is None  # one proposal in flight
    partition.isr_change_done(4, (1, 2), 8)
    assert (partition.isr, partition.zk_version, partition.high_watermark) == ((1, 2), 8, 2)
    partition.record_follower_fetch(3, 1, now_ms=2700)
    assert partition.begin_isr_change(2700, 2000, fetched_by=3) is None  # 1 < high watermark
    partition.record_follower_fetch(3, 2, now_ms=2800)
    assert partition.begin_isr_change(2800, 2000) is None  # only its own fetch admits it
    assert partition.begin_isr_change(2800, 2000, fetched_by=3) == (1, 2, 3)
    partition.isr_change_done(4, None, 8)  # rejected: the fresh state comes from ZooKeeper
    assert partition.isr == (1, 2) and partition.proposed_isr is None


def test_a_joining_replica_holds_back_the_high_watermark_while_proposed(tmp_path: Path
                                                                        ) -> None:
    partition = leader(tmp_path, isr=(1, 2), now_ms=0)
    partition.append_as_leader(records(b"a", b"b"))
    partition.record_follower_fetch(2, 2, now_ms=10)
    partition.record_follower_fetch(3, 2, now_ms=10)
    assert partition.begin_isr_change(10, 2000, fetched_by=3) == (1, 2, 3)
    partition.append_as_leader(records(b"c"))
    partition.record_follower_fetch(2, 3, now_ms=20)
    assert partition.high_watermark == 2  # 3 is joining and holds only 2
    partition.isr_change_done(4, (1, 2, 3), 8)
    partition.record_follower_fetch(3, 3, now_ms=30)
    assert partition.high_watermark == 3


def test_stale_epochs_and_versions_are_ignored(tmp_path: Path) -> None:
    partition = leader(tmp_path, epoch=4)
    assert not partition.become_leader(3, (1,), (1, 2, 3), 9, 0)
    assert not partition.become_follower(2, 3, (1, 2, 3), (2,), 9)
    assert not partition.become_leader(4, (1,), (1, 2, 3), 6, 0)  # older version, same term
    assert partition.isr == (1, 2, 3)
    assert partition.become_leader(4, (1, 2), (1, 2, 3), 8, 0)  # our own write echoed back
    assert partition.isr == (1, 2) and partition.is_leader
    assert partition.become_follower(NO_LEADER, 4, (1, 2, 3), (1, 2), 9)  # leader lost
    assert not partition.is_leader and partition.leader_epoch == 4


def test_only_role_changes_notify_an_isr_change_within_a_term_does_not(tmp_path: Path
                                                                        ) -> None:
    partition = leader(tmp_path, epoch=4)
    fired: list[int] = []
    partition.role_changed.add(lambda: fired.append(partition.leader_epoch))
    assert partition.become_leader(4, (1, 2), (1, 2, 3), 8, 0)  # the dead broker dropped
    assert partition.isr == (1, 2) and fired == []
    assert partition.become_leader(4, (1, 2), (1, 2, 3, 4), 9, 0)  # a replica added
    assert partition.become_leader(5, (1, 2), (1, 2, 3, 4), 10, 0)  # a new term
    assert fired == [4, 5]
    assert partition.become_follower(2, 6, (1, 2, 3, 4), (1, 2), 11)  # now following
    assert not partition.become_follower(2, 6, (1, 2, 3, 4), (2,), 12)  # ISR only
    assert partition.isr == (2,) and fired == [4, 5, 6]
    assert not partition.become_follower(2, 6, (2, 3, 4), (2,), 13)  # replicas changed
    assert fired == [4, 5, 6, 6]


def test_follower_appends_leader_batches_and_caps_the_high_watermark(tmp_path: Path) -> None:
    source = leader(tmp_path / "a", isr=(1,), epoch=2)
    source.append_as_leader(records(b"a", b"b"))
    source.append_as_leader(records(b"c"))
    data = memoryview(source.log.read(0, 1 << 20).read())
    log = LogManager([tmp_path / "b"], LogConfig()).get_or_create("t", 0, LogConfig())
    follower = Partition("t", 0, TOPIC_ID, log, broker_id=2)
    assert follower.become_follower(1, 2, (1, 2), (1, 2), 3)
    follower.append_as_follower(data, leader_high_watermark=10)
    assert (follower.log_end_offset, follower.high_watermark) == (3, 3)
    assert follower.log.leader_epoch_cache.entries == [(2, 0)]
    assert parse_batch_header(data, 0).partition_leader_epoch == 2
    follower.append_as_follower(memoryview(b""), leader_high_watermark=2)
    assert follower.high_watermark == 2  # the leader's word, as Kafka's follower takes it
    follower.truncate_to(2)
    assert follower.log_end_offset == 2
    follower.log.truncate_fully_and_start_at(50)
    assert (follower.log_start_offset, follower.log_end_offset, follower.high_watermark) == (
        50, 50, 50)
    assert follower.log.leader_epoch_cache.entries == []


@pytest.mark.parametrize("store_answer", ["written", "conflict", "error"])
def test_manager_proposes_through_the_isr_store_one_at_a_time(tmp_path: Path,
                                                              store_answer: str) -> None:
    @dataclass(frozen=True)
    class State:
        leader_epoch: int
        isr: tuple[int, ...]
        zk_version: int

    class Store:
        def __init__(self) -> None:
            self.calls: list[tuple[str, int, int, tuple[int, ...], int]] = []

        async def update_isr(self, topic: str, partition: int, leader_epoch: int,
                             isr: tuple[int, ...], zk_version: int) -> State | None:
            self.calls.append((topic, partition, leader_epoch, isr, zk_version))
            await asyncio.sleep(0)
            if store_answer == "error":
                raise ConnectionError("zookeeper away")
            if store_answer == "conflict":
                return None
            return State(leader_epoch, isr, zk_version + 1)

    async def scenario() -> tuple[Store, Partition]:
        now = [0]
        manager = ReplicaManager(1, LogManager([tmp_path], LogConfig()), lag_time_max_ms=1000,
                                 clock_ms=lambda: now[0])
        store = Store()
        manager.isr_store = store
        hosted = manager.become_leader("t", 0, TOPIC_ID, 3, LogConfig(), (1, 2, 3), (1, 2, 3), 5)
        manager.record_follower_fetch(hosted, 2, 0)
        now[0] = 1500
        manager.check_isrs()
        manager.check_isrs()  # in flight: no second write
        await asyncio.sleep(0.01)
        now[0] = 1600
        manager.check_isrs()  # written: nothing left to do; else: backing off
        await asyncio.sleep(0.01)
        assert len(store.calls) == 1
        now[0] = 2100
        manager.check_isrs()  # retried after the back-off unless it was written
        await asyncio.sleep(0.01)
        return store, hosted

    store, hosted = asyncio.run(scenario())
    expected_calls = 1 if store_answer == "written" else 2
    assert store.calls == [("t", 0, 3, (1,), 5)] * expected_calls  # 2 and 3 both lag
    assert hosted.proposed_isr is None
    expected = ((1,), 6) if store_answer == "written" else ((1, 2, 3), 5)
    assert (hosted.isr, hosted.zk_version) == expected


def test_no_isr_change_is_proposed_while_a_newer_state_is_on_its_way(tmp_path: Path) -> None:
    """A failover's pushed state (the dead broker already dropped) that the reconciler has
    not applied yet: a write at the replica's version could only be refused, so none is
    sent; once the replica has the delivered version, proposals resume."""
    class Store:
        calls = 0

        async def update_isr(self, topic: str, partition: int, leader_epoch: int,
                             isr: tuple[int, ...], zk_version: int) -> None:
            Store.calls += 1

    delivered = {("t", 0): PartitionState(1, 3, (1, 2), 1, 6)}

    async def scenario() -> tuple[int, tuple[int, ...] | None]:
        now = [0]
        manager = ReplicaManager(1, LogManager([tmp_path], LogConfig()), lag_time_max_ms=1000,
                                 clock_ms=lambda: now[0],
                                 delivered_state=lambda t, p: delivered.get((t, p)))
        manager.isr_store = Store()
        hosted = manager.become_leader("t", 0, TOPIC_ID, 3, LogConfig(), (1, 2, 3), (1, 2, 3), 5)
        manager.record_follower_fetch(hosted, 2, 0)
        now[0] = 1500
        manager.check_isrs()  # 3 lags, but version 6 is delivered: nothing written
        await asyncio.sleep(0)
        skipped = Store.calls, hosted.proposed_isr
        manager.become_leader("t", 0, TOPIC_ID, 3, LogConfig(), (1, 2), (1, 2, 3), 6)
        now[0] = 3000
        manager.check_isrs()  # applied; 2 lags now too
        await asyncio.sleep(0)
        return skipped

    assert asyncio.run(scenario()) == (0, None)
    assert Store.calls == 1


def test_a_dead_brokers_replica_is_left_to_the_controller_for_one_more_lag_time(
        tmp_path: Path) -> None:
    """Broker 3's registration is gone: the controller drops it from every ISR as it
    elects, so the leader proposes that shrink only after twice the lag time."""
    proposed: list[tuple[int, ...]] = []

    class Store:
        async def update_isr(self, topic: str, partition: int, leader_epoch: int,
                             isr: tuple[int, ...], zk_version: int) -> None:
            proposed.append(isr)

    async def scenario() -> None:
        now = [0]
        manager = ReplicaManager(1, LogManager([tmp_path], LogConfig()), lag_time_max_ms=1000,
                                 clock_ms=lambda: now[0], is_live={1, 2}.__contains__)
        manager.isr_store = Store()
        hosted = manager.become_leader("t", 0, TOPIC_ID, 3, LogConfig(), (1, 2, 3), (1, 2, 3), 5)
        for now[0] in (600, 1200, 1800):
            manager.record_follower_fetch(hosted, 2, 0)  # 2 keeps up, 3 is silent
            manager.check_isrs()
            await asyncio.sleep(0)
        assert proposed == []  # 1.8 s behind, more than the lag time: left to the controller
        now[0] = 2600
        manager.check_isrs()
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert proposed == [(1, 2)]


def test_only_live_brokers_rejoin_the_isr(tmp_path: Path) -> None:
    class Store:
        calls = 0

        async def update_isr(self, topic: str, partition: int, leader_epoch: int,
                             isr: tuple[int, ...], zk_version: int) -> None:
            Store.calls += 1

    async def scenario() -> None:
        live = {1, 2}
        manager = ReplicaManager(1, LogManager([tmp_path], LogConfig()),
                                 is_live=live.__contains__)
        manager.isr_store = Store()
        hosted = manager.become_leader("t", 0, TOPIC_ID, 3, LogConfig(), (1, 2), (1, 2, 3), 5)
        manager.record_follower_fetch(hosted, 3, 0)  # caught up, but its session is gone
        assert hosted.proposed_isr is None
        live.add(3)  # registered again
        manager.record_follower_fetch(hosted, 3, 0)
        assert hosted.proposed_isr == (1, 2, 3)
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert Store.calls == 1


def test_a_replica_being_removed_never_rejoins_the_isr(tmp_path: Path) -> None:
    class Store:
        async def update_isr(self, topic: str, partition: int, leader_epoch: int,
                             isr: tuple[int, ...], zk_version: int) -> None:
            raise AssertionError("no ISR change expected")

    async def scenario() -> None:
        manager = ReplicaManager(1, LogManager([tmp_path], LogConfig()))
        manager.isr_store = Store()
        hosted = manager.become_leader("t", 0, TOPIC_ID, 3, LogConfig(), (1, 2), (1, 2, 3), 5,
                                       removing=(3,))
        manager.record_follower_fetch(hosted, 3, 0)  # caught up, but being moved away
        assert hosted.proposed_isr is None
        manager.record_follower_fetch(hosted, 2, 0)
        assert hosted.proposed_isr is None  # already a member: nothing to propose
        await asyncio.sleep(0)

    asyncio.run(scenario())


def test_a_stalled_loop_skips_one_shrink_check(tmp_path: Path) -> None:
    class Store:
        async def update_isr(self, topic: str, partition: int, leader_epoch: int,
                             isr: tuple[int, ...], zk_version: int) -> None:
            return None

    async def scenario() -> list[tuple[int, ...] | None]:
        now = [0]
        manager = ReplicaManager(1, LogManager([tmp_path], LogConfig()), lag_time_max_ms=1000,
                                 clock_ms=lambda: now[0])
        manager.isr_store = Store()
        hosted = manager.become_leader("t", 0, TOPIC_ID, 3, LogConfig(), (1, 2), (1, 2, 3), 5)
        seen = []
        for now[0] in (500, 5000, 5900):  # 4.5 s between the first two checks: a stall
            manager.check_isrs()
            seen.append(hosted.proposed_isr)
        return seen

    assert asyncio.run(scenario()) == [None, None, (1,)]


def test_a_fetch_by_an_isr_member_leaves_shrinking_to_the_periodic_check(tmp_path: Path) -> None:
    """Kafka's fetch path only expands the ISR: replica 3 lags, but replica 2's fetch
    proposes nothing; the periodic check then drops 3."""
    proposed: list[tuple[int, ...]] = []

    class Store:
        async def update_isr(self, topic: str, partition: int, leader_epoch: int,
                             isr: tuple[int, ...], zk_version: int) -> None:
            proposed.append(isr)

    async def scenario() -> list[tuple[int, ...]]:
        now = [0]
        manager = ReplicaManager(1, LogManager([tmp_path], LogConfig()), lag_time_max_ms=1000,
                                 clock_ms=lambda: now[0])
        manager.isr_store = Store()
        hosted = manager.become_leader("t", 0, TOPIC_ID, 3, LogConfig(), (1, 2, 3), (1, 2, 3), 5)
        now[0] = 1500  # 3 has not fetched for more than the lag time
        manager.record_follower_fetch(hosted, 2, 0)
        await asyncio.sleep(0)
        after_fetch = list(proposed)
        manager.check_isrs()
        await asyncio.sleep(0)
        return after_fetch

    assert asyncio.run(scenario()) == []
    assert proposed == [(1, 2)]
