"""The machine-ceiling probes move the requested bytes and clean up after themselves."""

from __future__ import annotations

from pathlib import Path

from bench.ceiling import file_write_mb_per_second, loopback_mb_per_second


def test_loopback_delivers_an_uneven_volume() -> None:
    assert loopback_mb_per_second(3 * 1024 * 1024 + 17) > 0


def test_file_write_leaves_no_file(tmp_path: Path) -> None:
    assert file_write_mb_per_second(tmp_path, 2 * 1024 * 1024 + 5, fsync=True) > 0
    assert list(tmp_path.iterdir()) == []
