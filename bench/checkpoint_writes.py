"""What a burst of checkpoint writes costs: one file in each of N partition directories
(a broker taking N leaderships rewrites N leader-epoch checkpoints), written

* ``one_by_one``: :func:`~brokerd.storage.checkpoint.write_atomically` per file (temp
  file, fsync, rename, fsync of the directory: how the writer worked before batches);
* ``batch_fsync``: :func:`~brokerd.storage.checkpoint_writer.replace_files`, temp files
  in the shared staging directory, syncfs disabled (an fsync per temp file and per
  directory, in passes);
* ``batch_syncfs``: the same as the broker runs it (one syncfs per filesystem for the
  contents, one for the renames).

Prints wall seconds and the writing thread's CPU seconds (kernel time included), per
mode, round and directory given::

    .venv/bin/python -m bench.checkpoint_writes --files 10000 --dirs /work/tmp /dev/shm
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from unittest import mock

from brokerd.storage import checkpoint_writer
from brokerd.storage.checkpoint import encode_epoch_checkpoint, write_atomically


def one_by_one(files: Mapping[Path, bytes]) -> None:
    for path, data in files.items():
        write_atomically(path, data)


def batch_fsync(files: Mapping[Path, bytes]) -> None:
    with mock.patch.object(checkpoint_writer, "_SYNCFS", None):
        batch_syncfs(files)


def batch_syncfs(files: Mapping[Path, bytes]) -> None:
    failed = checkpoint_writer.replace_files(files, checkpoint_writer.in_parent_staging)
    assert not failed, failed


MODES: dict[str, Callable[[Mapping[Path, bytes]], None]] = {
    "one_by_one": one_by_one, "batch_fsync": batch_fsync, "batch_syncfs": batch_syncfs}


def measure(root: Path, count: int) -> dict[str, list[tuple[float, float]]]:
    """Mode -> (wall s, thread CPU s) of each of two rounds over ``count`` files under a
    fresh dir in ``root``: the first creates the staging directory's entries and inodes,
    the second is what a broker's later bursts cost."""
    results: dict[str, list[tuple[float, float]]] = {}
    for name, write in MODES.items():
        base = Path(tempfile.mkdtemp(prefix="checkpoints-", dir=root))
        try:
            files = {}
            for i in range(count):  # each partition's checkpoint exists, as after a start
                directory = base / f"topic-{i}"
                directory.mkdir()
                (directory / "leader-epoch-checkpoint").write_bytes(encode_epoch_checkpoint([]))
            for round_ in range(2):
                files = {directory / "leader-epoch-checkpoint": encode_epoch_checkpoint(
                    [(0, 0), (round_ + 1, i)]) for i, directory in enumerate(
                        base / f"topic-{i}" for i in range(count))}
                os.sync()  # every round starts with nothing dirty
                wall, cpu = time.monotonic(), time.thread_time()
                write(files)
                results.setdefault(name, []).append(
                    (time.monotonic() - wall, time.thread_time() - cpu))
        finally:
            shutil.rmtree(base, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--dirs", type=Path, nargs="+", default=[Path("/tmp"), Path("/dev/shm")])
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}, {args.files} files")
    for root in args.dirs:
        for name, rounds in measure(root, args.files).items():
            for round_, (wall, cpu) in enumerate(rounds, 1):
                print(f"{root}: {name:13} round {round_}: wall {wall:6.2f} s  cpu {cpu:5.2f} s"
                      f"  ({wall / args.files * 1e6:4.0f} us wall per file)")


if __name__ == "__main__":
    main()
