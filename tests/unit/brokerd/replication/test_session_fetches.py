"""Followers fetching through a fetch session (KIP-227) without naming idle partitions:
the leader counts those implied fetches for ISR lag, but never for a dead follower, a
lagging one, or one whose fetch was refused; role changes are announced; and what wakes
a session's parked fetch (a follower's not on a high watermark advance)."""

from __future__ import annotations

import uuid
from pathlib import Path

from brokerd.protocol.records import build_batch
from brokerd.replication import rules
from brokerd.replication.fetch_sessions import CachedPartition, FetchSession
from brokerd.replication.partition import Partition
from brokerd.server.handlers.fetch import _Binding
from brokerd.storage import LogConfig, LogManager

LAG_MS = 30_000


def leader(tmp_path: Path) -> Partition:
    log = LogManager([tmp_path], LogConfig()).get_or_create("t", 0, LogConfig())
    partition = Partition("t", 0, uuid.uuid4(), log, broker_id=1)
    assert partition.become_leader(4, (1, 2), (1, 2), zk_version=1, now_ms=0)
    return partition


def append(partition: Partition, count: int = 1) -> None:
    partition.append_as_leader(memoryview(build_batch(
        [(None, b"v", [], 1_700_000_000_000)] * count)))


def test_repeat_fetch_is_record_fetch_with_the_last_fetchs_values() -> None:
    caught_up = rules.record_fetch(rules.FollowerState(), 5, 5, now_ms=100)
    assert rules.repeat_fetch(caught_up, 900) == rules.record_fetch(caught_up, 5, 5, 900)
    assert rules.repeat_fetch(caught_up, 900).last_caught_up_ms == 900
    behind = rules.record_fetch(rules.FollowerState(), 3, 5, now_ms=100)
    assert rules.repeat_fetch(behind, 900).last_caught_up_ms == 0  # still behind
    assert rules.repeat_fetch(caught_up, 50) == caught_up  # not newer than the last
    fresh_term = rules.reset_for_leadership(caught_up, True, 1_000)
    assert rules.repeat_fetch(fresh_term, 5_000) == fresh_term  # no fetch this term yet


def test_an_idle_caught_up_follower_of_a_session_stays_in_the_isr(tmp_path: Path) -> None:
    partition = leader(tmp_path)
    append(partition, 3)
    partition.record_follower_fetch(2, 3, now_ms=1_000)  # caught up, then idle
    session_ms = [1_000]
    partition.session_fetches[2] = lambda: session_ms[0]
    session_ms[0] = 100_000  # it kept fetching (naming nothing) until now
    assert partition.begin_isr_change(100_500, LAG_MS) is None
    append(partition)  # data arrives after its last session fetch: no wrong shrink
    assert partition.begin_isr_change(100_600, LAG_MS) is None


def test_a_dead_follower_is_still_shrunk(tmp_path: Path) -> None:
    partition = leader(tmp_path)
    partition.record_follower_fetch(2, 0, now_ms=1_000)
    partition.session_fetches[2] = lambda: 2_000  # its session stopped fetching at 2 s
    assert partition.begin_isr_change(2_000 + LAG_MS + 1, LAG_MS) == (1,)


def test_a_lagging_or_refused_follower_gains_nothing_from_its_session(tmp_path: Path
                                                                     ) -> None:
    partition = leader(tmp_path)
    append(partition, 3)
    partition.record_follower_fetch(2, 1, now_ms=1_000)  # behind the leader's end
    partition.session_fetches[2] = lambda: 100_000
    assert partition.begin_isr_change(100_000, LAG_MS) == (1,)
    partition.isr_change_done(4, None, 1)
    partition.record_follower_fetch(2, 3, now_ms=1_000)
    partition.session_fetches[2] = lambda: None  # its last answer was an error
    assert partition.begin_isr_change(100_000, LAG_MS) == (1,)


def test_role_changes_are_announced(tmp_path: Path) -> None:
    partition = leader(tmp_path)
    seen: list[int] = []
    partition.role_changed.add(lambda: seen.append(partition.leader_id))
    partition.become_leader(5, (1, 2), (1, 2), zk_version=2, now_ms=0)
    partition.become_follower(2, 6, (1, 2), (2,), 3)
    partition.stop()
    assert seen == [1, 2, -1]


def test_a_follower_fetching_only_through_its_session_rejoins_but_a_dead_one_does_not(
        tmp_path: Path) -> None:
    """Shrunk out while it could not fetch (e.g. a stalled loop), an idle follower never
    names the partition again: its session's fetches must admit it, once each; a session
    that stopped fetching admits nobody."""
    partition = leader(tmp_path)
    partition.record_follower_fetch(2, 0, now_ms=1_000)
    assert partition.begin_isr_change(40_000, LAG_MS) == (1,)
    partition.isr_change_done(4, (1,), 2)
    session_ms = [40_000]
    partition.session_fetches[2] = lambda: session_ms[0]
    assert partition.begin_isr_change(40_500, LAG_MS, may_admit=lambda r: False) is None
    session_ms[0] = 41_000
    assert partition.begin_isr_change(41_000, LAG_MS, may_admit=lambda r: True) == (1, 2)
    partition.isr_change_done(4, None, 2)  # the write failed: retried on the next fetch
    assert partition.begin_isr_change(41_500, LAG_MS, may_admit=lambda r: True) is None
    session_ms[0] = 42_000
    assert partition.begin_isr_change(42_000, LAG_MS, may_admit=lambda r: True) == (1, 2)


def bound_session(partition: Partition, replica_id: int) -> tuple[FetchSession, list[str]]:
    """A session over ``partition`` bound as the Fetch handler binds it, recording its
    wake-ups."""
    key = (partition.topic, partition.index)
    cached = CachedPartition(key, {"partition": 0, "current_leader_epoch": 4,
                                   "fetch_offset": 0, "last_fetched_epoch": -1,
                                   "log_start_offset": 0, "partition_max_bytes": 1024})
    session = FetchSession(1, replica_id >= 0, {key: cached}, now_ms=0)
    cached.binding = _Binding(session, key, partition, replica_id)
    woken: list[str] = []
    session.notify = lambda: woken.append("woken")
    return session, woken


def test_a_high_watermark_advance_marks_a_follower_session_without_waking_it(
        tmp_path: Path) -> None:
    """A follower's parked fetch ends only on data or an error, so a high watermark
    advance (the other follower's fetch) only marks the partition: the news rides along
    with the follower's next answer."""
    partition = leader(tmp_path)
    session, woken = bound_session(partition, replica_id=2)
    append(partition)  # ISR (1, 2): nothing commits before follower 2 has it
    assert woken == ["woken"] and list(session.pending) == [("t", 0)]
    session.pending.clear()
    partition.record_follower_fetch(2, 1, now_ms=1_000)  # the high watermark advances
    assert partition.high_watermark == 1
    assert woken == ["woken"]  # not woken again
    assert list(session.pending) == [("t", 0)]  # but answered next time
    partition.become_leader(5, (1, 2), (1, 2), zk_version=2, now_ms=0)
    assert woken == ["woken", "woken"]  # a role change still wakes it (it answers an error)


def test_a_high_watermark_advance_wakes_a_consumer_session(tmp_path: Path) -> None:
    partition = leader(tmp_path)
    session, woken = bound_session(partition, replica_id=-1)
    append(partition)
    assert woken == [] and not session.pending  # consumers read to the high watermark
    partition.record_follower_fetch(2, 1, now_ms=1_000)
    assert woken == ["woken"] and list(session.pending) == [("t", 0)]
    cached = session.partitions[("t", 0)]
    cached.close()  # released: no more notifications, no implied fetches left behind
    partition.record_follower_fetch(2, 1, now_ms=2_000)
    append(partition)
    partition.record_follower_fetch(2, 2, now_ms=3_000)
    assert woken == ["woken"]
