"""The limits the density phases raise: how many replicas a descriptor limit allows, and
the mapping limit raised only as far as those replicas need (it is machine-wide)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import limits


def test_a_replica_costs_three_descriptors_after_the_brokers_own() -> None:
    assert limits.replica_capacity(20_000) == 6_333
    assert limits.replica_capacity(500) == 0


def test_map_count_is_raised_for_the_replicas_asked(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    maps = tmp_path / "max_map_count"
    maps.write_text("100")
    monkeypatch.setattr(limits, "MAX_MAP_COUNT", maps)
    result = limits.prepare_for(replicas_per_broker=1_000)
    assert maps.read_text() == str(2 * 1_000 + limits.MAP_HEADROOM)
    assert result.max_map_count == 2 * 1_000 + limits.MAP_HEADROOM
    assert any("vm.max_map_count 100 ->" in change for change in result.changes)


def test_a_sufficient_map_count_is_left_alone(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    maps = tmp_path / "max_map_count"
    maps.write_text("1000000")
    monkeypatch.setattr(limits, "MAX_MAP_COUNT", maps)
    assert limits.raise_max_map_count(65_530) is None
    assert maps.read_text() == "1000000"
