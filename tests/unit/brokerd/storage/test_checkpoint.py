from pathlib import Path

from brokerd.storage.checkpoint import (
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
