import logging
import threading
from pathlib import Path

import pytest

from brokerd.storage.checkpoint import (
    CheckpointWriter,
    encode_epoch_checkpoint,
    read_epoch_checkpoint,
    read_offset_checkpoint,
    write_atomically,
    write_offset_checkpoint,
)


def test_offset_checkpoint_round_trip_in_kafka_text_format(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    offsets = {("orders", 1): 1498, ("orders", 0): 1500, ("a.b-c", 7): 0}
    write_offset_checkpoint(path, offsets)
    assert path.read_text() == "0\n3\na.b-c 7 0\norders 0 1500\norders 1 1498\n"
    assert read_offset_checkpoint(path) == offsets
    assert not path.with_name(path.name + ".tmp").exists()


def test_epoch_checkpoint_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    write_atomically(path, encode_epoch_checkpoint([(0, 0), (3, 120)]))
    assert path.read_text() == "0\n2\n0 0\n3 120\n"
    assert read_epoch_checkpoint(path) == [(0, 0), (3, 120)]


def test_missing_or_malformed_files_read_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "cp"
    assert read_offset_checkpoint(path) == {}
    for text in ["", "1\n0\n", "0\n2\nt 0 5\n", "0\n1\nt zero 5\n", "0\n1\nt 0\n"]:
        path.write_text(text)
        assert read_offset_checkpoint(path) == {}, text
    path.write_text("0\n1\n4\n")
    assert read_epoch_checkpoint(path) == []


class GatedWrites:
    """A write function that records each write and holds it until the test opens the gate."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started = threading.Semaphore(0)
        self.written: list[tuple[str, bytes]] = []

    def __call__(self, path: Path, data: bytes) -> None:
        self.started.release()
        assert self.gate.wait(10)
        write_atomically(path, data)
        self.written.append((path.name, data))


def test_writer_coalesces_pending_writes_of_a_file_latest_wins(tmp_path: Path) -> None:
    writes = GatedWrites()
    writer = CheckpointWriter(writes)
    writer.submit(tmp_path / "a", b"1")
    assert writes.started.acquire(timeout=10)  # "1" is being written
    for data in (b"2", b"3", b"4"):
        writer.submit(tmp_path / "a", data)
    writes.gate.set()
    writer.wait(tmp_path / "a")
    assert writes.written == [("a", b"1"), ("a", b"4")]
    assert (tmp_path / "a").read_bytes() == b"4"


def test_writer_serves_files_in_submission_order_and_waits_per_file(tmp_path: Path) -> None:
    writes = GatedWrites()
    writes.gate.set()
    writer = CheckpointWriter(writes)
    for name in ("a", "b", "c"):
        writer.submit(tmp_path / name, name.encode())
    writer.submit(tmp_path / "a", b"a2")
    writer.wait(tmp_path / "c")
    writer.wait(tmp_path / "a")
    assert [name for name, _ in writes.written][:3] == ["a", "b", "c"]
    assert (tmp_path / "a").read_bytes() == b"a2"


def test_a_failed_write_is_logged_and_the_writer_goes_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    writer = CheckpointWriter()
    with caplog.at_level(logging.WARNING):
        writer.submit(tmp_path / "deleted-dir" / "cp", b"lost")
        writer.wait(tmp_path / "deleted-dir" / "cp")
    writer.submit(tmp_path / "cp", b"kept")
    writer.wait(tmp_path / "cp")
    assert "could not write checkpoint" in caplog.text
    assert not (tmp_path / "deleted-dir").exists()  # never recreated
    assert (tmp_path / "cp").read_bytes() == b"kept"
