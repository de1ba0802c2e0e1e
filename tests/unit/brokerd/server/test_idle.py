"""IdleSchedule: which members went idle, without scanning all of them."""

from __future__ import annotations

from dataclasses import dataclass, field

from brokerd.server import idle as idle_module
from brokerd.server.idle import IdleSchedule


@dataclass(eq=False)
class Member:
    last_active: float
    stamps_read: int = field(default=0)


def schedule() -> IdleSchedule[Member]:
    def stamp(member: Member) -> float:
        member.stamps_read += 1
        return member.last_active

    return IdleSchedule(stamp)


def test_members_silent_since_before_the_cutoff_are_idle_once() -> None:
    idle = schedule()
    old, recent = Member(1.0), Member(5.0)
    idle.add(old)
    idle.add(recent)
    assert idle.pop_idle(1.0) == []  # strictly earlier than the cutoff
    assert idle.pop_idle(2.0) == [old]
    assert idle.pop_idle(2.0) == []  # returned once
    assert set(idle.members()) == {old, recent}  # members until discarded (closed)
    idle.discard(old)
    assert list(idle.members()) == [recent] and len(idle) == 1


def test_activity_since_scheduling_postpones_expiry() -> None:
    idle = schedule()
    member = Member(1.0)
    idle.add(member)
    member.last_active = 10.0  # traffic: the schedule is not told
    assert idle.pop_idle(5.0) == []
    assert idle.pop_idle(10.5) == [member]


def test_a_check_with_nothing_due_reads_no_stamp() -> None:
    idle = schedule()
    members = [Member(100.0 + i) for i in range(1000)]
    for member in members:
        idle.add(member)
    before = sum(m.stamps_read for m in members)
    for _ in range(100):
        assert idle.pop_idle(50.0) == []
    assert sum(m.stamps_read for m in members) == before


def test_each_member_is_read_once_per_idle_period_while_active() -> None:
    idle = schedule()
    members = [Member(0.0) for _ in range(100)]
    for member in members:
        idle.add(member)
    for now in range(1, 100):  # every member active every second, idle period 10 s
        for member in members:
            member.last_active = float(now)
        assert idle.pop_idle(now - 10.0) == []
    reads = [m.stamps_read for m in members]
    assert max(reads) <= 1 + 100 // 10


def test_discarded_members_are_never_returned_and_do_not_pile_up() -> None:
    idle = schedule()
    kept = Member(0.0)
    idle.add(kept)
    for _ in range(10 * idle_module._REBUILD_SLACK):
        churn = Member(0.0)
        idle.add(churn)
        idle.discard(churn)
    assert len(idle._heap) <= 2 * len(idle) + idle_module._REBUILD_SLACK
    assert idle.pop_idle(1.0) == [kept]


def test_discarding_an_unknown_member_is_a_no_op() -> None:
    idle = schedule()
    idle.discard(Member(0.0))
    assert len(idle) == 0
