import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from brokerd.storage.offset_index import OffsetIndex


def make(tmp_path: Path, max_size: int = 80, base: int = 100) -> OffsetIndex:
    return OffsetIndex(tmp_path / "x.index", base, max_size, preallocate=True)


def test_lookup_returns_floor_entry_or_segment_start(tmp_path: Path) -> None:
    index = make(tmp_path)
    for offset, position in [(110, 4100), (125, 8300), (140, 12500)]:
        index.append(offset, position)
    assert index.lookup(99) == (100, 0)
    assert index.lookup(109) == (100, 0)
    assert index.lookup(110) == (110, 4100)
    assert index.lookup(124) == (110, 4100)
    assert index.lookup(125) == (125, 8300)
    assert index.lookup(10_000) == (140, 12500)


def test_entries_must_increase_and_capacity_is_bounded(tmp_path: Path) -> None:
    index = make(tmp_path, max_size=20)  # room for 2 whole 8-byte entries
    index.append(101, 10)
    with pytest.raises(ValueError):
        index.append(101, 20)
    with pytest.raises(ValueError):
        index.append(102, 10)
    index.append(102, 20)
    assert index.is_full
    with pytest.raises(OverflowError):
        index.append(103, 30)


def test_preallocated_then_trimmed_on_close_and_reloaded(tmp_path: Path) -> None:
    index = make(tmp_path)
    index.append(105, 500)
    index.append(107, 900)
    assert index.path.stat().st_size == 80
    index.close()
    assert index.path.stat().st_size == 16
    reopened = OffsetIndex(index.path, 100, 80, preallocate=False)
    assert reopened.consistent and reopened.entries == 2
    assert reopened.lookup(106) == (105, 500)


def test_untrimmed_or_zeroed_or_torn_file_is_inconsistent(tmp_path: Path) -> None:
    index = make(tmp_path)
    index.append(105, 500)
    index.flush()
    untrimmed = OffsetIndex(index.path, 100, 80, preallocate=False)  # crash image
    assert untrimmed.entries == 1 and not untrimmed.consistent
    index.close()
    index.path.write_bytes(bytes(16))
    assert not OffsetIndex(index.path, 100, 80, preallocate=False).consistent
    index.path.write_bytes(bytes.fromhex("0000000500000100") + b"\x00\x00\x00")
    torn = OffsetIndex(index.path, 100, 80, preallocate=False)
    assert torn.entries == 1 and not torn.consistent


def test_truncate_to_drops_entries_at_or_above_offset_and_zeroes_them(tmp_path: Path) -> None:
    index = make(tmp_path)
    for offset, position in [(110, 100), (120, 200), (130, 300)]:
        index.append(offset, position)
    index.truncate_to(120)
    assert index.entries == 1 and index.last_offset == 110
    index.flush()
    crash_image = OffsetIndex(index.path, 100, 80, preallocate=False)
    assert crash_image.entries == 1  # dropped entries cannot come back as a valid prefix


FULL_FILESYSTEM_APPEND = """
import errno, os, sys
from pathlib import Path
from brokerd.storage.offset_index import OffsetIndex
directory = Path(sys.argv[1])
index = OffsetIndex(directory / "x.index", 0, 1 << 20, preallocate=True)  # sparse 1 MiB
ballast = os.open(directory / "ballast", os.O_WRONLY | os.O_CREAT)
try:  # to the filesystem's last block
    while True:
        os.write(ballast, bytes(4096))
except OSError:
    os.close(ballast)
try:
    index.append(1, 0)
except OSError as exc:
    print("ENOSPC" if exc.errno == errno.ENOSPC else exc, index.entries)
"""


@pytest.fixture
def tiny_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs of its own (the tests run as root, as the fault suite does)."""
    mount_point = tmp_path / "fs"
    mount_point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount_point)],
                   check=True, timeout=10)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True, timeout=10)


def test_an_index_on_a_full_filesystem_fails_with_enospc_not_sigbus(
        tiny_filesystem: Path) -> None:
    """A store into a mapped page the filesystem cannot back kills the process with
    SIGBUS; the index allocates each page before writing it, so a full log dir is an
    error the broker handles (run in a child process, so a regression fails the test
    rather than the test runner)."""
    child = subprocess.run([sys.executable, "-c", FULL_FILESYSTEM_APPEND, str(tiny_filesystem)],
                           capture_output=True, text=True, timeout=60,
                           cwd=Path(__file__).resolve().parents[4])
    assert child.returncode == 0, (child.returncode, child.stderr)
    assert child.stdout.split() == ["ENOSPC", "0"]


def test_msync_only_what_was_written_since_the_last_one(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Flushing or trimming an index with nothing unsynced syncs nothing (an idle log's
    clean close trims two of them); a write not yet synced is synced by either."""
    import mmap

    import brokerd.storage.index as index_module

    syncs: list[int] = []

    class CountingMap(mmap.mmap):
        def flush(self, *args: int) -> None:
            syncs.append(len(self))
            super().flush(*args)

    monkeypatch.setattr(index_module.mmap, "mmap", CountingMap)
    index = make(tmp_path)
    index.flush()
    index.trim()  # empty and never written: nothing to sync
    assert syncs == []
    index.resize(80)
    index.append(105, 500)
    index.flush()
    index.flush()
    assert syncs == [80]
    index.append(107, 900)
    index.trim()  # the unsynced entry is synced before the file shrinks
    assert syncs == [80, 80]
    index.flush()
    index.close()
    assert syncs == [80, 80]
    assert OffsetIndex(index.path, 100, 80, preallocate=False).lookup(108) == (107, 900)
