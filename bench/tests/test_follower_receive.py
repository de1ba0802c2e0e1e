"""bench.follower_receive's two receive paths deliver every byte the sender sent, in order,
into the file (so the CPU each reports is for the whole transfer)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.follower_receive import CHUNK, measure


@pytest.mark.parametrize("mode", ["copy", "splice"])
def test_every_byte_arrives_in_the_file(tmp_path: Path, mode: str) -> None:
    row = measure(mode, 4, str(tmp_path))
    source = (tmp_path / "source").read_bytes()
    assert (tmp_path / f"received-{mode}").read_bytes() == source * 4
    assert len(source) == CHUNK and row["MB/s"] > 0 and row["receiver CPU ms/MB"] >= 0
