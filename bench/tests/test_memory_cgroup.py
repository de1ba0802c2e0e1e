"""The brokers' memory cgroup of the throughput ratio (:mod:`bench.memory_cgroup`): finding
this process's cgroup, the fill arithmetic, and a real cgroup around a sleeping process."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench.memory_cgroup import (
    HEADROOM_BYTES,
    fill_bytes,
    own_memory_cgroup,
    warm_page_cache,
)
from bench.replication import spread_assignment

MIB = 1024 * 1024


def test_the_v1_memory_hierarchy_is_preferred_to_the_unified_one() -> None:
    text = "9:name=systemd:/\n4:memory:/process_api/abc\n3:cpuset:/\n0::/\n"
    assert own_memory_cgroup(text, Path("/cg")) == (Path("/cg/memory/process_api/abc"), 1)


def test_a_pure_v2_machine_uses_the_unified_hierarchy() -> None:
    assert own_memory_cgroup("0::/user.slice/session-1.scope\n", Path("/cg")) == (
        Path("/cg/user.slice/session-1.scope"), 2)


def test_no_memory_cgroup_is_reported_as_none() -> None:
    assert own_memory_cgroup("3:cpuset:/\n", Path("/cg")) is None


def test_the_fill_leaves_headroom_and_never_goes_negative() -> None:
    assert fill_bytes(1024 * MIB, 100 * MIB) == 1024 * MIB - 100 * MIB - HEADROOM_BYTES
    assert fill_bytes(300 * MIB, 100 * MIB) == 0


def test_leaders_and_followers_are_spread_over_the_brokers() -> None:
    assert spread_assignment(6, 1) == [[1], [2], [3], [1], [2], [3]]
    assert spread_assignment(3, 3) == [[1, 2, 3], [2, 3, 1], [3, 1, 2]]


def _memory_cgroups_writable() -> bool:
    found = own_memory_cgroup(Path("/proc/self/cgroup").read_text())
    return found is not None and found[0].is_dir() and (found[0] / "cgroup.procs").exists()


@pytest.mark.skipif(not _memory_cgroups_writable(), reason="no memory cgroup mounted here")
def test_a_process_is_held_in_a_filled_cgroup_and_released_afterwards(tmp_path: Path
                                                                     ) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    limit = HEADROOM_BYTES + 64 * MIB
    try:
        with warm_page_cache([sleeper.pid], limit, tmp_path) as (cgroup, memory):
            assert cgroup is not None, memory
            assert memory == {"limit_bytes": limit, "cgroup_version": cgroup.version}
            assert sleeper.pid in cgroup.pids()
            assert cgroup.limit == limit
            written = cgroup.fill()
            assert written > 0
            assert cgroup.scratch.stat().st_size == written
            # The scratch's page cache is charged to the cgroup, not to this process's.
            assert cgroup.usage >= written // 2
            path = cgroup.path
        assert not path.exists()
        assert not cgroup.scratch.exists()
        assert sleeper.poll() is None  # handed back to the parent cgroup, still running
    finally:
        sleeper.kill()
        sleeper.wait()
