"""The Metadata partitions benchmark runs end to end on a small topic."""

from __future__ import annotations

from bench.metadata_entries import measure


def test_both_ways_of_building_are_measured_for_every_round() -> None:
    figures = measure(partitions=100, changed=30, rounds=4)
    assert {k: figures[k] for k in ("partitions", "changed_per_round", "rounds")} == {
        "partitions": 100, "changed_per_round": 30, "rounds": 4}
    assert figures["fresh_ms"] > 0 and figures["handed_on_ms"] > 0
