"""Recovery accepts the offset gaps compaction creates, and still detects lost tails.

Segments are contiguous even across gaps (a new segment starts at the log end), so a
segment ending before its successor's base still means a lost tail after a crash.
"""

import random
import shutil
from pathlib import Path

from brokerd.protocol.records import iter_batches, patch_base_offset
from brokerd.storage import Log, LogConfig
from brokerd.storage.cleaner import LogCleaner

from .conftest import FakeClock, batch
from .helpers import offsets, read_all
from .test_cleaner import CONFIG, Written, open_manager, write_updates

FOLLOWER = LogConfig(segment_bytes=3000, index_interval_bytes=500)


def crash_reopen(log: Log, tmp_path: Path, clock: FakeClock, config: LogConfig) -> Log:
    image = tmp_path / "crash" / log.directory.name
    log.leader_epoch_cache.flush()  # no background checkpoint rename during the copy
    shutil.copytree(log.directory, image)
    return Log(image, config, clean_shutdown=False, recovery_point=0, clock=clock)


def test_follower_of_a_compacted_leader_recovers_everything(
    tmp_path: Path, clock: FakeClock
) -> None:
    manager = open_manager(tmp_path / "leader", clock)
    leader = manager.get_or_create("t", 0)
    written: Written = {}
    write_updates(leader, random.Random(11), 5_000, 500, clock.now_ms, written)
    leader.roll()
    assert LogCleaner(manager).clean_once(clock.now_ms)
    data = leader.read(0, 1 << 40).read()
    follower = Log(tmp_path / "follower" / "t-0", FOLLOWER, clean_shutdown=True, clock=clock)
    for position, header in iter_batches(data):  # one fetch per batch: rolls land in gaps
        follower.append_as_follower(memoryview(data)[position : position + header.size_in_bytes])
    assert len(follower.segments) > 3
    gaps = [
        (a.last_offset, b.base_offset)
        for a, b in zip(read_all(follower), read_all(follower)[1:], strict=False)
        if b.base_offset != a.last_offset + 1
    ]
    assert gaps  # the compacted log does skip offsets
    bases = [s.base_offset for s in follower.segments]
    assert all(s.next_offset == b for s, b in zip(follower.segments, bases[1:], strict=False))

    recovered = crash_reopen(follower, tmp_path, clock, FOLLOWER)
    assert recovered.read(0, 1 << 40).read() == data
    assert recovered.log_end_offset == leader.log_end_offset


def test_lost_tail_at_a_segment_boundary_is_still_cut(tmp_path: Path, clock: FakeClock) -> None:
    log = Log(tmp_path / "t-0", FOLLOWER, clean_shutdown=True, clock=clock)
    for _ in range(30):
        log.append_as_leader(batch(3, value_size=50), 0)
    middle = log.segments[1]
    position, header = list(middle.iter_batches(0))[-1]
    image = tmp_path / "crash" / "t-0"
    log.leader_epoch_cache.flush()  # no background checkpoint rename during the copy
    shutil.copytree(log.directory, image)
    with (image / middle.log_path.name).open("r+b") as f:
        f.truncate(position)  # an OS crash lost the rolled segment's last pages
    recovered = Log(image, FOLLOWER, clean_shutdown=False, recovery_point=0, clock=clock)
    assert recovered.log_end_offset == header.base_offset
    assert [s.base_offset for s in recovered.segments] == [0, middle.base_offset]
    assert offsets(read_all(recovered))[-1][1] == header.base_offset - 1


def test_roll_forced_by_a_huge_gap_survives_recovery(tmp_path: Path, clock: FakeClock) -> None:
    log = Log(tmp_path / "t-0", FOLLOWER, clean_shutdown=True, clock=clock)
    for base_offset in (10, 2**31 + 100):
        data = bytearray(batch(2))
        patch_base_offset(data, 0, base_offset)
        log.append_as_follower(memoryview(data))
    # The lowest base from which 2**31 + 101 fits a relative offset: a boundary gap.
    assert [s.base_offset for s in log.segments] == [0, 2**31 + 101 - (2**31 - 1)]
    recovered = crash_reopen(log, tmp_path, clock, FOLLOWER)
    assert offsets(read_all(recovered)) == [(10, 11), (2**31 + 100, 2**31 + 101)]


def test_compacted_log_recovers_after_a_crash(tmp_path: Path, clock: FakeClock) -> None:
    manager = open_manager(tmp_path, clock)
    log = manager.get_or_create("t", 0)
    write_updates(log, random.Random(12), 5_000, 50, clock.now_ms, {})
    log.roll()
    assert LogCleaner(manager).clean_once(clock.now_ms)
    expected = log.read(0, 1 << 40).read()
    recovered = crash_reopen(log, tmp_path, clock, CONFIG)
    assert recovered.read(0, 1 << 40).read() == expected
