"""A crash at any step of the cleaner's swap leaves a valid log with every key's latest value.

The commit step is a sequence of renames (``os.replace``); the test counts them, then for
each one reruns the cleaning, "crashes" just before that rename, copies the partition
directory as the crash image, and reopens it both after an unclean shutdown (full
recovery from offset 0) and as if clean.
"""

import os
import random
import shutil
from pathlib import Path

import pytest

from brokerd.storage import Log
from brokerd.storage.cleaner import LogCleaner

from .conftest import FakeClock
from .test_cleaner import (
    CONFIG,
    Written,
    assert_original_offsets,
    latest,
    open_manager,
    read_records,
    write_updates,
)

WRITE_CONFIG = CONFIG.with_overrides({"segment.bytes": "4096"})
# Cleaning with larger segments groups several small source segments per output.
CLEAN_CONFIG = CONFIG.with_overrides({"segment.bytes": "8192"})


class Crash(Exception):
    """Stands for the process dying before a rename."""


def cleaned_crash_image(
    root: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, crash_at: int | None
) -> tuple[Path, Written, int, int]:
    """Write, clean with a crash before rename number ``crash_at`` (None: no crash), and
    return (crash image, what was written, renames done, log end offset)."""
    manager = open_manager(root, clock, WRITE_CONFIG)
    log = manager.get_or_create("t", 0)
    written: Written = {}
    write_updates(log, random.Random(7), 1_000, 40, clock.now_ms, written)
    log.leader_epoch_cache.flush()  # its background rename must not count below
    log.update_config(CLEAN_CONFIG)
    cleaner = LogCleaner(manager)
    job = cleaner.plan(clock.now_ms)
    assert job is not None and len(job.plan.groups) >= 2
    assert any(len(group) > 1 for group in job.plan.groups)
    result = job.build()
    renames = 0
    real_replace = os.replace

    def replace(source: object, target: object) -> None:
        nonlocal renames
        if renames == crash_at:
            raise Crash
        renames += 1
        real_replace(source, target)  # type: ignore[arg-type]

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", replace)
        try:
            assert cleaner.commit(job, result)
        except Crash:
            pass
    image = root / "image"
    shutil.copytree(log.directory, image)
    return image, written, renames, log.log_end_offset


def reopen_and_check(image: Path, clock: FakeClock, written: Written, end: int, clean: bool) -> None:
    directory = image.with_name(f"{image.name}-{clean}")
    shutil.copytree(image, directory)
    log = Log(directory, CLEAN_CONFIG, clean_shutdown=clean, recovery_point=0, clock=clock)
    assert log.log_end_offset == end
    records = read_records(log)
    assert_original_offsets(records, written)
    assert {r.key: r.value for r in records} == {k: v for k, (_, v) in latest(written).items()}
    leftovers = [p.name for p in directory.iterdir() if p.suffix in (".cleaned", ".swap")]
    assert leftovers == []
    bases = [s.base_offset for s in log.segments]
    assert all(s.next_offset == nxt for s, nxt in zip(log.segments, bases[1:], strict=False))
    log.close()


def test_crash_before_any_rename_of_the_swap_leaves_a_valid_log(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, total, _ = cleaned_crash_image(tmp_path / "dry", clock, monkeypatch, None)
    assert total >= 12  # per group: 3 to .swap, 3 per source to .deleted, 3 to live
    for crash_at in range(total):
        root = tmp_path / f"crash-{crash_at}"
        image, written, renames, end = cleaned_crash_image(root, clock, monkeypatch, crash_at)
        assert renames == crash_at
        names = [p.name for p in image.iterdir()]
        if crash_at == 0:
            assert any(name.endswith(".log.cleaned") for name in names)
        if crash_at == 3:  # the first group's files are all .swap, its sources still live
            assert any(name.endswith(".log.swap") for name in names)
        for clean in (False, True):
            reopen_and_check(image, clock, written, end, clean)
