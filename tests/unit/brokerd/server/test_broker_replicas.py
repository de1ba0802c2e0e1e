"""Broker.topic_changed (through its Reconciler) turns ZooKeeper partition state into
replica roles: lead, follow, drop; large topics reconciled in time slices that a newer state
supersedes."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from brokerd.config import build_config
from brokerd.coordination.znodes import PartitionState, TopicMetadata
from brokerd.protocol import ErrorCode
from brokerd.server import reconciler
from brokerd.server.broker import Broker
from brokerd.server.closest_replica import serving_partition
from brokerd.server.reconciler import SYNC_RECONCILE_MAX
from tests.unit.brokerd.storage.conftest import batch

TOPIC_ID = uuid.UUID(int=5)


def topic(partitions: int, leader: int, epoch: int = 0, replicas: tuple[int, ...] = (1, 2, 3),
          topic_id: uuid.UUID = TOPIC_ID) -> TopicMetadata:
    return TopicMetadata("t", topic_id, {p: replicas for p in range(partitions)},
                         {p: PartitionState(leader, epoch, replicas, 0, 0)
                          for p in range(partitions)})


def broker(tmp_path: Path) -> Broker:
    config = build_config({"broker.id": "1", "listeners": "PLAINTEXT://127.0.0.1:0",
                           "zookeeper.connect": "unused:2181", "log.dirs": str(tmp_path)})
    created = Broker(config)
    created.log_manager.load()
    return created


def roles(broker: Broker) -> dict[int, tuple[bool, int]]:
    return {p.index: (p.is_leader, p.leader_epoch) for p in broker.replicas.partitions()}


def test_small_topics_apply_at_once_roles_follow_the_state(tmp_path: Path) -> None:
    async def scenario() -> list[dict[int, tuple[bool, int]]]:
        hosted = broker(tmp_path)
        seen = []
        hosted.topic_changed("t", topic(2, leader=1))
        seen.append(roles(hosted))
        hosted.topic_changed("t", topic(2, leader=2, epoch=1))
        seen.append(roles(hosted))
        hosted.topic_changed("t", topic(2, leader=1, epoch=0))  # stale epoch: ignored
        seen.append(roles(hosted))
        hosted.topic_changed("t", topic(2, leader=2, epoch=2, replicas=(2, 3)))
        seen.append(roles(hosted))
        await hosted.replicas.close()
        hosted.log_manager.close()
        return seen

    assert asyncio.run(scenario()) == [{0: (True, 0), 1: (True, 0)},
                                       {0: (False, 1), 1: (False, 1)},
                                       {0: (False, 1), 1: (False, 1)},
                                       {}]  # no longer a replica here: logs deleted
    assert not (tmp_path / "t-0").exists()


def test_large_topics_reconcile_in_chunks_and_the_newest_state_wins(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reconciler, "RECONCILE_SLICE_S", 0.0)  # a partition per turn
    count = SYNC_RECONCILE_MAX * 3

    async def scenario() -> tuple[int, int, dict[int, tuple[bool, int]]]:
        hosted = broker(tmp_path)
        hosted.topic_changed("t", topic(count, leader=1))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        partial = len(hosted.replicas.partitions())
        hosted.topic_changed("t", topic(count, leader=2, epoch=1))  # supersedes the first
        await asyncio.sleep(0)
        in_between = len(hosted.replicas.partitions())
        for _ in range(count):
            await asyncio.sleep(0)
        final = roles(hosted)
        await hosted.replicas.close()
        hosted.log_manager.close()
        return partial, in_between, final

    partial, in_between, final = asyncio.run(scenario())
    assert 0 < partial < count and in_between < count
    assert final == {p: (False, 1) for p in range(count)}


@pytest.mark.parametrize(("slice_s", "per_turn"), [(0.0, 1), (60.0, reconciler.RECONCILE_CHUNK)])
def test_a_reconciliation_yields_once_its_time_slice_or_chunk_is_spent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slice_s: float, per_turn: int) -> None:
    """Every request waiting on the broker waits out a slice: it ends after 2 ms of loop
    time (a partition whose log is made may cost a millisecond of file work) or after a
    chunk of partitions (in a failover each costs tens of microseconds), whichever first."""
    monkeypatch.setattr(reconciler, "RECONCILE_SLICE_S", slice_s)
    count = max(SYNC_RECONCILE_MAX, reconciler.RECONCILE_CHUNK) * 2 + 1

    async def scenario() -> list[int]:
        hosted = broker(tmp_path)
        hosted.topic_changed("t", topic(count, leader=1))
        seen = []
        for _ in range(3):
            await asyncio.sleep(0)
            seen.append(len(hosted.replicas.partitions()))
        await hosted.replicas.close()
        hosted.log_manager.close()
        return seen

    assert asyncio.run(scenario()) == [min(per_turn * turn, count) for turn in (1, 2, 3)]


def test_coordinators_learn_of_led_partitions_after_every_slice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FindCoordinator answers from the metadata cache at once; a coordinator told only
    after the topic's last slice would answer NOT_COORDINATOR meanwhile."""
    monkeypatch.setattr(reconciler, "RECONCILE_SLICE_S", 60.0)  # a chunk per turn
    count = reconciler.RECONCILE_CHUNK * 3

    async def scenario() -> list[int]:
        hosted = broker(tmp_path)
        led_when_told: list[int] = []
        hosted.reconciler.on_applied.append(
            lambda name: led_when_told.append(len(hosted.replicas.partitions())))
        hosted.topic_changed("t", topic(count, leader=1))
        await hosted.reconciler.settled()
        await hosted.replicas.close()
        hosted.log_manager.close()
        return led_when_told

    chunk = reconciler.RECONCILE_CHUNK
    assert asyncio.run(scenario()) == [chunk, 2 * chunk, 3 * chunk, 3 * chunk]


def test_waiting_for_a_topic_to_be_applied_never_cancels_its_reconciliation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FindCoordinator waits for its own coordinator this way before naming itself."""
    monkeypatch.setattr(reconciler, "RECONCILE_SLICE_S", 0.0)  # a partition per turn
    count = SYNC_RECONCILE_MAX * 4

    async def scenario() -> tuple[int, int, int]:
        hosted = broker(tmp_path)
        hosted.topic_changed("t", topic(count, leader=1))
        await hosted.reconciler.applied("t", timeout=0.0)  # gives up at once
        after_timeout = len(hosted.replicas.partitions())
        waiter = asyncio.ensure_future(hosted.reconciler.applied("t", timeout=60.0))
        await asyncio.sleep(0)
        waiter.cancel()
        await asyncio.sleep(0)
        await hosted.reconciler.applied("t", timeout=60.0)
        applied = len(hosted.replicas.partitions())
        await hosted.replicas.close()
        hosted.log_manager.close()
        return after_timeout, applied, count

    after_timeout, applied, total = asyncio.run(scenario())
    assert after_timeout < total
    assert applied == total


def test_partitions_already_applied_do_not_count_against_a_chunk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ISR change of a topic restarts its reconciliation from the first partition;
    the ones already applied must not cost a yield per chunk on the way to the new one."""
    monkeypatch.setattr(reconciler, "RECONCILE_SLICE_S", 60.0)  # chunks alone end slices
    count = max(SYNC_RECONCILE_MAX + 1, reconciler.RECONCILE_CHUNK * 4)
    last = count - 1

    async def scenario() -> tuple[bool, int] | None:
        hosted = broker(tmp_path)
        hosted.topic_changed("t", topic(count, leader=1))
        await hosted.reconciler.settled()
        moved = topic(count, leader=1)
        moved.states[last] = PartitionState(2, 1, (1, 2, 3), 0, 1)
        hosted.topic_changed("t", moved)
        await asyncio.sleep(0)  # one turn of the loop
        partition = hosted.replicas.get("t", last)
        role = None if partition is None else (partition.is_leader, partition.leader_epoch)
        await hosted.reconciler.settled()
        await hosted.replicas.close()
        hosted.log_manager.close()
        return role

    assert asyncio.run(scenario()) == (False, 1)


def test_a_large_topic_is_served_no_more_at_once_and_its_logs_deleted_in_slices(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Created again under the same name before the deletion ends, the new topic waits
    for it: its replicas get fresh logs, never the deleted topic's data."""
    monkeypatch.setattr(reconciler, "RECONCILE_SLICE_S", 60.0)  # chunks alone end slices
    count = max(SYNC_RECONCILE_MAX + 1, reconciler.RECONCILE_CHUNK * 3)

    async def scenario() -> tuple[int, int, int, set[int]]:
        hosted = broker(tmp_path)
        hosted.topic_changed("t", topic(count, leader=1))
        await hosted.reconciler.settled()
        for partition in hosted.replicas.partitions():
            partition.log.append_as_leader(batch(1), partition.leader_epoch)
        hosted.topic_changed("t", None)
        served_after_deletion = len(hosted.replicas.partitions())
        await asyncio.sleep(0)
        logs_left = len(hosted.log_manager.all_logs())
        again = topic(count, leader=1, topic_id=uuid.UUID(int=6))
        last_first = TopicMetadata("t", again.topic_id, dict(reversed(again.replicas.items())),
                                   again.states)  # reaches logs not yet deleted, if it may
        hosted.topic_changed("t", last_first)
        await hosted.reconciler.settled()
        ends = {p.log.log_end_offset for p in hosted.replicas.partitions()}
        served_again = len(hosted.replicas.partitions())
        await hosted.replicas.close()
        hosted.log_manager.close()
        return served_after_deletion, logs_left, served_again, ends

    served_after_deletion, logs_left, served_again, ends = asyncio.run(scenario())
    assert served_after_deletion == 0
    assert 0 < logs_left < count  # a slice deleted, the rest still to come
    assert served_again == count and ends == {0}


def test_a_shutdown_finishes_the_deletions_it_interrupts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ZooKeeper no longer names a deleted topic, so nothing would delete its remaining
    logs after a restart: a tenant's deleted data must not outlive one."""
    monkeypatch.setattr(reconciler, "RECONCILE_SLICE_S", 0.0)  # a log per turn
    count = SYNC_RECONCILE_MAX * 4

    async def scenario() -> int:
        hosted = broker(tmp_path)
        hosted.topic_changed("t", topic(count, leader=1))
        await hosted.reconciler.settled()
        hosted.topic_changed("t", None)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        left_when_stopping = len(hosted.log_manager.all_logs())
        hosted.reconciler.cancel()
        await hosted.replicas.close()
        hosted.log_manager.close()
        return left_when_stopping

    assert 0 < asyncio.run(scenario()) < count
    assert not any(tmp_path.glob("t-*[0-9]"))  # every log renamed for deletion


def test_leadership_changes_apply_before_isr_only_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failover changes every partition of a topic at once, most only in their ISR; the
    partition that changes leader must not wait behind them (producers wait for it)."""
    monkeypatch.setattr(reconciler, "RECONCILE_SLICE_S", 60.0)  # chunks alone end slices
    count = max(SYNC_RECONCILE_MAX + 1, reconciler.RECONCILE_CHUNK * 4)
    last = count - 1

    async def scenario() -> tuple[tuple[bool, int] | None, tuple[int, ...] | None]:
        hosted = broker(tmp_path)
        hosted.topic_changed("t", topic(count, leader=1))
        await hosted.reconciler.settled()
        failed_over = topic(count, leader=1)
        failed_over.states.update({p: PartitionState(1, 0, (1, 3), 0, 1) for p in range(count)})
        failed_over.states[last] = PartitionState(3, 1, (1, 3), 0, 1)
        hosted.topic_changed("t", failed_over)
        await asyncio.sleep(0)  # one turn of the loop: one chunk
        moved = hosted.replicas.get("t", last)
        isr_only = hosted.replicas.get("t", last - 1)
        seen = (None if moved is None else (moved.is_leader, moved.leader_epoch),
                None if isr_only is None else isr_only.isr)
        await hosted.reconciler.settled()
        assert hosted.replicas.get("t", last - 1).isr == (1, 3)  # type: ignore[union-attr]
        await hosted.replicas.close()
        hosted.log_manager.close()
        return seen

    assert asyncio.run(scenario()) == ((False, 1), (1, 2, 3))


async def handed_over(tmp_path: Path, count: int, old_leader: int, new_leader: int) -> Broker:
    """A broker hosting a large topic led by ``old_leader`` (applied), then told that
    ``new_leader`` leads it in epoch 1 (not reconciled yet: no turn of the loop since)."""
    hosted = broker(tmp_path)
    hosted.topic_changed("t", topic(count, leader=old_leader))
    await hosted.reconciler.settled()
    hosted.topic_changed("t", topic(count, leader=new_leader, epoch=1))
    return hosted


async def settle_and_close(hosted: Broker) -> None:
    await hosted.reconciler.settled()
    await hosted.replicas.close()
    hosted.log_manager.close()


def test_a_partition_asked_for_takes_its_role_ahead_of_its_topics_reconciliation(
        tmp_path: Path) -> None:
    """A failover hands this broker every leadership of a large topic; a Produce for the
    last partition must not answer NOT_LEADER_OR_FOLLOWER until the reconciler gets there."""
    count = SYNC_RECONCILE_MAX * 4
    last = count - 1

    async def scenario() -> tuple[object, ...]:
        hosted = await handed_over(tmp_path, count, old_leader=2, new_leader=1)
        asked, error = hosted.leader_partition("t", last)
        # A consumer that may read from followers (Fetch v11+) gets the new leader too,
        # not the replica as it was.
        read_from, _ = serving_partition(hosted, "t", last - 1, -1, 12)
        seen = (asked is not None and asked.leader_epoch, error,
                read_from is not None and (read_from.is_leader, read_from.leader_epoch),
                roles(hosted)[0],
                hosted.reconciler.apply_now("t", last))  # already applied: nothing to do
        await hosted.reconciler.settled()
        after = (set(roles(hosted).values()), hosted.reconciler.apply_now("t", 0))
        await settle_and_close(hosted)
        return seen + after

    assert asyncio.run(scenario()) == (1, ErrorCode.NONE, (True, 1), (False, 0), False,
                                       {(True, 1)}, False)


def test_a_request_never_hurries_a_followership(tmp_path: Path) -> None:
    """The leadership moves from broker 2 to 3, and a client with stale metadata asks
    this follower: the answer is NOT_LEADER_OR_FOLLOWER, and the reconciler's order of
    work stays as it was (the follower of 2 in epoch 0 until its turn)."""
    count = SYNC_RECONCILE_MAX * 4
    last = count - 1

    async def scenario() -> tuple[object, ...]:
        hosted = await handed_over(tmp_path, count, old_leader=2, new_leader=3)
        seen = (hosted.leader_partition("t", last)[1], roles(hosted)[last])
        await settle_and_close(hosted)
        return seen

    assert asyncio.run(scenario()) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, (False, 0))


def test_a_follower_checks_the_requests_leader_epoch_first(tmp_path: Path) -> None:
    """Kafka's order for a replica hosted here that does not lead: a request naming a
    newer leader epoch than the replica's (a new follower, or a client, ahead of this
    broker) hears UNKNOWN_LEADER_EPOCH, an older one FENCED_LEADER_EPOCH, the same one
    (or none) NOT_LEADER_OR_FOLLOWER; an unhosted partition stays UNKNOWN_TOPIC_OR_PARTITION."""
    async def scenario() -> list[ErrorCode]:
        hosted = broker(tmp_path)
        hosted.topic_changed("t", topic(SYNC_RECONCILE_MAX, leader=2, epoch=3))
        await hosted.reconciler.settled()
        errors = [hosted.leader_partition("t", 0, epoch)[1] for epoch in (4, 2, 3, -1)]
        errors.append(hosted.leader_partition("t", SYNC_RECONCILE_MAX, 4)[1])
        await settle_and_close(hosted)
        return errors

    assert asyncio.run(scenario()) == [
        ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
