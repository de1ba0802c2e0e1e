"""Replica placement over brokers and racks."""

from __future__ import annotations

from collections import Counter

import pytest

from brokerd.coordination.assignment import AssignmentError, assign_replicas, rack_alternated


def test_rack_alternated_interleaves_racks() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "c", 5: "b", 6: "a"}
    assert rack_alternated(sorted(racks), racks) == [1, 3, 4, 2, 5, 6]


def test_every_partition_spans_all_racks_and_leaders_are_balanced() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    placed = assign_replicas(sorted(racks), range(12), 3, racks=racks)
    for replicas in placed.values():
        assert len(set(replicas)) == 3
        assert {racks[b] for b in replicas} == {"a", "b", "c"}
    assert set(Counter(r[0] for r in placed.values()).values()) == {2}


def test_uneven_racks_place_rf_above_rack_count_without_doubling_a_broker() -> None:
    racks = {1: "a", 2: "a", 3: "a", 4: "b"}
    for replicas in assign_replicas(sorted(racks), range(8), 3, racks=racks).values():
        assert len(set(replicas)) == 3 and 4 in replicas


def test_racks_must_be_all_or_nothing() -> None:
    with pytest.raises(AssignmentError):
        assign_replicas([1, 2], [0], 2, racks={1: "a", 2: None})
    assert assign_replicas([1, 2], [0, 1], 2, racks={1: None, 2: None}) == {
        0: (1, 2), 1: (2, 1)}
