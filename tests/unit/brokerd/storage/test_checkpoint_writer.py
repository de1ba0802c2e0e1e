"""Batched checkpoint replacement: passes, failures, crash-safety order, and the writer
thread's batching, coalescing and per-path ordering."""

import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path

import pytest

from brokerd.storage import checkpoint_writer
from brokerd.storage.checkpoint_writer import (
    BURST_MIN_FILES,
    STAGING_DIR,
    CheckpointWriter,
    Failures,
    in_parent_staging,
    replace_files,
)


def partition_files(log_dir: Path, count: int, content: bytes = b"old") -> list[Path]:
    """One existing checkpoint in each of ``count`` partition directories."""
    paths = []
    for i in range(count):
        directory = log_dir / f"t-{i}"
        directory.mkdir(parents=True)
        (directory / "cp").write_bytes(content)
        paths.append(directory / "cp")
    return paths


@pytest.mark.parametrize("count", [1, BURST_MIN_FILES])
def test_replace_files_replaces_every_file_and_leaves_no_temp(tmp_path: Path,
                                                              count: int) -> None:
    paths = partition_files(tmp_path, count)
    assert replace_files({p: f"new {p.parent.name}".encode() for p in paths},
                         in_parent_staging) == {}
    assert all(p.read_bytes() == f"new {p.parent.name}".encode() for p in paths)
    assert list(tmp_path.rglob("*.tmp")) == []
    assert (tmp_path / STAGING_DIR).is_dir() == (count >= BURST_MIN_FILES)


@pytest.mark.parametrize("count", [2, BURST_MIN_FILES])
def test_a_file_that_cannot_be_replaced_does_not_stop_the_others(tmp_path: Path,
                                                                 count: int) -> None:
    paths = partition_files(tmp_path, count)
    gone = tmp_path / "deleted" / "cp"  # its directory was deleted meanwhile
    failed = replace_files({gone: b"lost", **{p: b"new" for p in paths}}, in_parent_staging)
    assert list(failed) == [gone] and isinstance(failed[gone], FileNotFoundError)
    assert not gone.parent.exists()  # never recreated
    assert all(p.read_bytes() == b"new" for p in paths)


def test_a_burst_makes_every_temp_file_durable_before_the_first_rename(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    real_syncfs, real_replace = checkpoint_writer.syncfs, os.replace

    def syncfs(directory: Path) -> None:
        events.append(f"syncfs {directory.name}")
        real_syncfs(directory)

    def rename(source: Path, target: Path) -> None:
        events.append("rename")
        real_replace(source, target)
    monkeypatch.setattr(checkpoint_writer, "syncfs", syncfs)
    monkeypatch.setattr(checkpoint_writer.os, "replace", rename)
    paths = partition_files(tmp_path, BURST_MIN_FILES)
    assert replace_files(dict.fromkeys(paths, b"new"), in_parent_staging) == {}
    # one filesystem: one syncfs for the contents, the renames, one for the renames, both
    # found through the staging directory (not a stat of each partition directory)
    assert events == [f"syncfs {STAGING_DIR}", *["rename"] * len(paths),
                      f"syncfs {STAGING_DIR}"]


def test_a_crash_mid_batch_leaves_each_file_old_or_new_and_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The process dies at the fifth rename of a burst: no file is torn or empty."""
    paths = partition_files(tmp_path, BURST_MIN_FILES, b"old content")
    renames = 0
    real_replace = os.replace

    class Crash(BaseException):
        pass

    def rename(source: Path, target: Path) -> None:
        nonlocal renames
        renames += 1
        if renames == 5:
            raise Crash
        real_replace(source, target)
    monkeypatch.setattr(checkpoint_writer.os, "replace", rename)
    with pytest.raises(Crash):
        replace_files(dict.fromkeys(paths, b"new content"), in_parent_staging)
    contents = [p.read_bytes() for p in paths]
    assert contents == [b"new content"] * 4 + [b"old content"] * (len(paths) - 4)
    monkeypatch.undo()  # the next batch after a restart overwrites the leftover temps
    assert replace_files(dict.fromkeys(paths, b"newer"), in_parent_staging) == {}
    assert [p.read_bytes() for p in paths] == [b"newer"] * len(paths)


def test_a_failed_filesystem_sync_fails_its_files_without_renaming_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_disk(directory: Path) -> None:
        raise OSError(5, "Input/output error")
    monkeypatch.setattr(checkpoint_writer, "syncfs", broken_disk)
    paths = partition_files(tmp_path, BURST_MIN_FILES)
    failed = replace_files(dict.fromkeys(paths, b"new"), in_parent_staging)
    assert sorted(failed) == sorted(paths)
    assert all(p.read_bytes() == b"old" for p in paths)


class GatedBatches:
    """A replace function that records each batch and holds it until the gate opens."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started = threading.Semaphore(0)
        self.batches: list[dict[str, bytes]] = []

    def __call__(self, files: Mapping[Path, bytes]) -> Failures:
        self.started.release()
        assert self.gate.wait(10)
        self.batches.append({path.name: data for path, data in files.items()})
        return replace_files(files)


def test_the_writer_takes_every_pending_file_at_once_latest_content_wins(
        tmp_path: Path) -> None:
    replace = GatedBatches()
    writer = CheckpointWriter(replace)
    writer.submit(tmp_path / "a", b"1")
    assert replace.started.acquire(timeout=10)  # the first batch, {"a": "1"}, is held
    for name, data in [("a", b"2"), ("b", b"1"), ("a", b"3"), ("c", b"1"), ("b", b"2")]:
        writer.submit(tmp_path / name, data)
    replace.gate.set()
    for name in "abc":
        writer.wait(tmp_path / name)
    assert replace.batches == [{"a": b"1"}, {"a": b"3", "b": b"2", "c": b"1"}]
    assert [(tmp_path / name).read_bytes() for name in "abc"] == [b"3", b"2", b"1"]


def test_wait_covers_a_path_being_written(tmp_path: Path) -> None:
    replace = GatedBatches()
    writer = CheckpointWriter(replace)
    writer.submit(tmp_path / "a", b"1")
    assert replace.started.acquire(timeout=10)
    waiting = threading.Thread(target=writer.wait, args=(tmp_path / "a",))
    waiting.start()
    waiting.join(0.2)
    assert waiting.is_alive()  # in the batch being written, no longer pending
    replace.gate.set()
    waiting.join(10)
    assert not waiting.is_alive() and (tmp_path / "a").read_bytes() == b"1"


def test_failures_are_logged_and_the_writer_goes_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    calls = 0

    def replace(files: Mapping[Path, bytes]) -> Failures:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("the whole batch failed")
        return replace_files(files)
    writer = CheckpointWriter(replace)
    with caplog.at_level(logging.WARNING):
        writer.submit(tmp_path / "first", b"lost")
        writer.wait(tmp_path / "first")
        writer.submit(tmp_path / "deleted-dir" / "cp", b"lost")
        writer.submit(tmp_path / "cp", b"kept")
        writer.wait(tmp_path / "cp")
        writer.wait(tmp_path / "deleted-dir" / "cp")
    assert "could not write checkpoint" in caplog.text and "the whole batch" in caplog.text
    assert not (tmp_path / "first").exists() and not (tmp_path / "deleted-dir").exists()
    assert (tmp_path / "cp").read_bytes() == b"kept"


def test_a_burst_arriving_in_pieces_is_gathered_into_one_batch(tmp_path: Path) -> None:
    batches: list[int] = []

    def replace(files: Mapping[Path, bytes]) -> Failures:
        batches.append(len(files))
        return replace_files(files)
    writer = CheckpointWriter(replace, linger_s=30)  # only a burst or a waiter ends it
    paths = partition_files(tmp_path, BURST_MIN_FILES + 8)
    for start in range(0, len(paths), 10):  # pieces, as a reconciliation's chunks
        for path in paths[start:start + 10]:
            writer.submit(path, b"new")
        threading.Event().wait(0.02)
    for path in paths:
        writer.wait(path)
    assert batches[0] >= BURST_MIN_FILES and sum(batches) == len(paths)
    assert all(p.read_bytes() == b"new" for p in paths)


def test_a_waiter_ends_the_linger(tmp_path: Path) -> None:
    writer = CheckpointWriter(linger_s=30)
    writer.submit(tmp_path / "cp", b"now")
    waiting = threading.Thread(target=writer.wait, args=(tmp_path / "cp",))
    waiting.start()
    waiting.join(10)  # a hang guard, far below the linger
    assert not waiting.is_alive() and (tmp_path / "cp").read_bytes() == b"now"
