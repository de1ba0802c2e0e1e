"""Broker-side assignors: Kafka's documented examples, and properties under hypothesis.

Properties (every assignor): each subscribed partition goes to exactly one subscriber and
nothing else is assigned; the same input gives the same output.  ``uniform`` also: with
identical subscriptions member loads differ by at most one, and a join or leave moves only
the partitions that must move.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokerd.groups.assignors import ASSIGNORS, MemberSpec
from brokerd.groups.assignors.spec import Assignment

ALL = sorted(ASSIGNORS)


def spec(*topics: str, current: set[tuple[str, int]] | None = None,
         instance: str | None = None) -> MemberSpec:
    return MemberSpec(frozenset(topics), frozenset(current or ()), instance)


def plain(result: Assignment) -> dict[str, list[tuple[str, int]]]:
    return {member: sorted(parts) for member, parts in result.items()}


def tp(names: str) -> list[tuple[str, int]]:
    """``"t0p0 t1p2"`` -> [("t0", 0), ("t1", 2)] (sorted)."""
    out = []
    for name in names.split():
        topic, partition = name.split("p")
        out.append((topic, int(partition)))
    return sorted(out)


# ---- Kafka's documented examples --------------------------------------------------------

def test_range_two_consumers_two_topics_of_three_partitions() -> None:
    """RangeAssignor javadoc: C0 gets t0p0 t0p1 t1p0 t1p1, C1 gets t0p2 t1p2."""
    members = {"C0": spec("t0", "t1"), "C1": spec("t0", "t1")}
    assert plain(ASSIGNORS["range"](members, {"t0": 3, "t1": 3})) == {
        "C0": tp("t0p0 t0p1 t1p0 t1p1"), "C1": tp("t0p2 t1p2")}


def test_roundrobin_identical_subscriptions() -> None:
    """RoundRobinAssignor javadoc: C0 gets t0p0 t0p2 t1p1, C1 gets t0p1 t1p0 t1p2."""
    members = {"C0": spec("t0", "t1"), "C1": spec("t0", "t1")}
    assert plain(ASSIGNORS["roundrobin"](members, {"t0": 3, "t1": 3})) == {
        "C0": tp("t0p0 t0p2 t1p1"), "C1": tp("t0p1 t1p0 t1p2")}


def test_roundrobin_differing_subscriptions() -> None:
    """RoundRobinAssignor javadoc: C0 on t0, C1 on t0 t1, C2 on t0 t1 t2 (1, 2, 3
    partitions) -> C0 t0p0; C1 t1p0; C2 t1p1 t2p0 t2p1 t2p2."""
    members = {"C0": spec("t0"), "C1": spec("t0", "t1"), "C2": spec("t0", "t1", "t2")}
    assert plain(ASSIGNORS["roundrobin"](members, {"t0": 1, "t1": 2, "t2": 3})) == {
        "C0": tp("t0p0"), "C1": tp("t1p0"), "C2": tp("t1p1 t2p0 t2p1 t2p2")}


def test_uniform_matches_the_sticky_assignor_example() -> None:
    """StickyAssignor javadoc: three consumers over t0..t3 of two partitions each get
    C0 t0p0 t1p1 t3p0, C1 t0p1 t2p0 t3p1, C2 t1p0 t2p1; when C1 leaves its partitions are
    spread over the others and nothing else moves: C0 t0p0 t1p1 t3p0 t2p0,
    C2 t1p0 t2p1 t0p1 t3p1."""
    topics = {"t0": 2, "t1": 2, "t2": 2, "t3": 2}
    names = ("t0", "t1", "t2", "t3")
    first = ASSIGNORS["uniform"]({m: spec(*names) for m in ("C0", "C1", "C2")}, topics)
    assert plain(first) == {"C0": tp("t0p0 t1p1 t3p0"), "C1": tp("t0p1 t2p0 t3p1"),
                            "C2": tp("t1p0 t2p1")}
    second = ASSIGNORS["uniform"](
        {m: spec(*names, current=set(first[m])) for m in ("C0", "C2")}, topics)
    assert plain(second) == {"C0": tp("t0p0 t1p1 t2p0 t3p0"), "C2": tp("t0p1 t1p0 t2p1 t3p1")}


def test_uniform_three_members_six_partitions_two_each() -> None:
    members = {f"m{i}": spec("t") for i in range(3)}
    result = ASSIGNORS["uniform"](members, {"t": 6})
    assert sorted(len(parts) for parts in result.values()) == [2, 2, 2]


@pytest.mark.parametrize("name", ALL)
def test_static_members_ordered_by_instance_id(name: str) -> None:
    """A restarted static member (new member id, same instance id) gets the same share."""
    before = ASSIGNORS[name]({"a": spec("t", instance="i1"), "b": spec("t", instance="i2")},
                             {"t": 4})
    after = ASSIGNORS[name]({"z": spec("t", instance="i1"), "b": spec("t", instance="i2")},
                            {"t": 4})
    assert before["a"] == after["z"] and before["b"] == after["b"]


@pytest.mark.parametrize("name", ALL)
def test_unknown_topics_and_no_members(name: str) -> None:
    assert ASSIGNORS[name]({}, {"t": 3}) == {}
    assert ASSIGNORS[name]({"a": spec("missing")}, {"t": 3}) == {"a": frozenset()}


def test_uniform_drops_partitions_of_unsubscribed_or_shrunk_topics() -> None:
    members = {"a": spec("t", current={("t", 5), ("u", 0), ("t", 0)})}
    assert plain(ASSIGNORS["uniform"](members, {"t": 2, "u": 1})) == {"a": tp("tp0 tp1")}


# ---- properties --------------------------------------------------------------------------

TOPIC_NAMES = ("a", "b", "c", "d")
topics_strategy = st.dictionaries(st.sampled_from(TOPIC_NAMES), st.integers(0, 12),
                                  min_size=1)
member_ids = st.lists(st.text("mnop", min_size=1, max_size=3), min_size=1, max_size=7,
                      unique=True)


@st.composite
def groups(draw: st.DrawFn, identical: bool = False
           ) -> tuple[dict[str, MemberSpec], dict[str, int]]:
    topics = draw(topics_strategy)
    ids = draw(member_ids)
    names = sorted(topics)
    if identical:
        chosen = frozenset(draw(st.lists(st.sampled_from(names), min_size=1, unique=True)))
        members = {m: MemberSpec(chosen) for m in ids}
    else:
        members = {m: MemberSpec(frozenset(draw(st.lists(st.sampled_from(TOPIC_NAMES),
                                                         unique=True))))
                   for m in ids}
    return members, topics


def check_valid(members: dict[str, MemberSpec], topics: dict[str, int],
                result: Assignment) -> None:
    assert set(result) == set(members)
    owners = Counter(p for parts in result.values() for p in parts)
    assert all(count == 1 for count in owners.values())
    for member, parts in result.items():
        assert all(topic in members[member].subscribed and p < topics[topic]
                   for topic, p in parts)
    wanted = {(t, p) for spec_ in members.values() for t in spec_.subscribed
              for p in range(topics.get(t, 0))}
    assert set(owners) == wanted


@pytest.mark.parametrize("name", ALL)
@settings(max_examples=150, deadline=None)
@given(group=groups())
def test_every_subscribed_partition_has_exactly_one_subscribing_owner(
        name: str, group: tuple[dict[str, MemberSpec], dict[str, int]]) -> None:
    members, topics = group
    check_valid(members, topics, ASSIGNORS[name](members, topics))


@pytest.mark.parametrize("name", ALL)
@settings(max_examples=100, deadline=None)
@given(group=groups())
def test_identical_input_gives_identical_output(
        name: str, group: tuple[dict[str, MemberSpec], dict[str, int]]) -> None:
    members, topics = group
    reordered = dict(reversed(list(members.items())))
    assert ASSIGNORS[name](members, topics) == ASSIGNORS[name](reordered, dict(topics))


@pytest.mark.parametrize("name", ["uniform", "roundrobin"])
@settings(max_examples=150, deadline=None)
@given(group=groups(identical=True))
def test_identical_subscriptions_are_balanced_within_one_partition(
        name: str, group: tuple[dict[str, MemberSpec], dict[str, int]]) -> None:
    members, topics = group
    loads = [len(parts) for parts in ASSIGNORS[name](members, topics).values()]
    assert max(loads) - min(loads) <= 1


def _stable(members: dict[str, MemberSpec], topics: dict[str, int]) -> Assignment:
    return ASSIGNORS["uniform"](members, topics)


def _with_current(members: dict[str, MemberSpec], result: Assignment
                  ) -> dict[str, MemberSpec]:
    return {m: MemberSpec(s.subscribed, result.get(m, frozenset()), s.instance_id)
            for m, s in members.items()}


@settings(max_examples=150, deadline=None)
@given(group=groups(identical=True), joiner=st.text("xyz", min_size=1, max_size=2))
def test_uniform_join_moves_only_the_joiners_share(
        group: tuple[dict[str, MemberSpec], dict[str, int]], joiner: str) -> None:
    members, topics = group
    before = _stable(members, topics)
    grown = _with_current(members, before)
    grown[joiner] = MemberSpec(next(iter(members.values())).subscribed)
    after = ASSIGNORS["uniform"](grown, topics)
    for member in members:
        assert after[member] <= before[member]  # nobody gains, only the joiner
    moved = sum(len(before[m] - after[m]) for m in members)
    assert moved == len(after[joiner])
    total = sum(len(p) for p in before.values())
    assert len(after[joiner]) == total // len(grown)  # the smallest balanced share


@settings(max_examples=150, deadline=None)
@given(group=groups(identical=True), data=st.data())
def test_uniform_leave_moves_only_the_leavers_partitions(
        group: tuple[dict[str, MemberSpec], dict[str, int]], data: st.DataObject) -> None:
    members, topics = group
    if len(members) < 2:
        return
    before = _stable(members, topics)
    leaver = data.draw(st.sampled_from(sorted(members)))
    rest = {m: s for m, s in _with_current(members, before).items() if m != leaver}
    after = ASSIGNORS["uniform"](rest, topics)
    for member in rest:
        assert before[member] <= after[member]  # nobody loses anything
    loads = [len(p) for p in after.values()]
    assert max(loads) - min(loads) <= 1


@settings(max_examples=100, deadline=None)
@given(group=groups())
def test_uniform_is_stable_when_nothing_changes(
        group: tuple[dict[str, MemberSpec], dict[str, int]]) -> None:
    members, topics = group
    first = ASSIGNORS["uniform"](members, topics)
    assert ASSIGNORS["uniform"](_with_current(members, first), topics) == first
