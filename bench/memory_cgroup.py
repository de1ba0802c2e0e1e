"""Brokers under measurement in a memory cgroup whose limit is full of clean page cache,
so that every log write reuses a page, as on a long-running broker.

Why: this machine is a VM whose balloon reports free guest pages back to the host a few
seconds after they are freed.  The first write into such a page costs a host fault:
measured here with 1 MiB ``pwrite`` calls, 3.1–4.7 ms of CPU per MB for fresh pages
against 0.15–0.3 ms for recycled ones (about 12 µs per 4 KiB page).  A broker whose page
cache is still growing pays that on every byte it logs; RF 3 writes three copies, so the
acks=all/acks=1 ratio ended up measuring the VM's page provisioning (0.14 to 0.54 from
run to run, depending on which phase happened to find recycled pages).  In production a
broker's page cache is full and recycles, and a managed service runs brokers in
containers with memory limits, which recycle the same way.

So :func:`warm_page_cache` puts the brokers into a child of this process's memory cgroup
(cgroup v1 ``memory.limit_in_bytes``, or v2 ``memory.max``), and :meth:`MemoryCgroup.fill`
writes a scratch file from inside it up to the limit and syncs it: the kernel then makes
room for each new log page by reclaiming a clean scratch page, which is already backed.
Needs root and a writable memory controller; without them the brokers run as before and
the result says why (``unavailable``).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CGROUP_ROOT = Path("/sys/fs/cgroup")
# What the scratch file leaves free under the limit: room for the brokers' own growth
# (their anonymous memory cannot be reclaimed; there is no swap) before reclaim starts.
HEADROOM_BYTES = 256 * 1024 * 1024


def own_memory_cgroup(proc_cgroup: str, root: Path = CGROUP_ROOT) -> tuple[Path, int] | None:
    """This process's memory cgroup directory and the cgroup version, from the text of
    ``/proc/self/cgroup``: the v1 ``N:memory:/path`` line (under ``root/memory``) if
    there is one, else the v2 ``0::/path`` line (under ``root``)."""
    unified = None
    for line in proc_cgroup.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if "memory" in controllers.split(","):
            return root / "memory" / path.lstrip("/"), 1
        if hierarchy == "0" and controllers == "":
            unified = root / path.lstrip("/")
    return (unified, 2) if unified is not None else None


def fill_bytes(limit: int, usage: int, headroom: int = HEADROOM_BYTES) -> int:
    """How much scratch page cache brings the cgroup to its limit, less the headroom."""
    return max(limit - usage - headroom, 0)


@dataclass(frozen=True)
class MemoryCgroup:
    path: Path
    version: int
    scratch: Path  # the file :meth:`fill` writes

    @property
    def _limit_file(self) -> Path:
        return self.path / ("memory.limit_in_bytes" if self.version == 1 else "memory.max")

    @property
    def _usage_file(self) -> Path:
        return self.path / ("memory.usage_in_bytes" if self.version == 1
                            else "memory.current")

    @classmethod
    def create(cls, parent: Path, version: int, name: str, limit_bytes: int, scratch: Path
               ) -> MemoryCgroup:
        if version == 2:  # the parent must hand the memory controller down
            (parent / "cgroup.subtree_control").write_text("+memory")
        path = parent / name
        path.mkdir()
        cgroup = cls(path, version, scratch)
        try:
            cgroup._limit_file.write_text(str(limit_bytes))
        except OSError:
            path.rmdir()
            raise
        return cgroup

    @property
    def limit(self) -> int:
        return int(self._limit_file.read_text())

    @property
    def usage(self) -> int:
        return int(self._usage_file.read_text())

    def add(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))

    def pids(self) -> list[int]:
        return [int(pid) for pid in (self.path / "cgroup.procs").read_text().split()]

    def fill(self) -> int:
        """Write the scratch file afresh from inside the cgroup until its usage is near the
        limit, synced so that its pages are clean (reclaimable without writeback); the
        bytes written.  The old scratch's pages, freed first, are what it reuses."""
        self.scratch.unlink(missing_ok=True)
        megabytes = fill_bytes(self.limit, self.usage) // (1024 * 1024)
        subprocess.run(
            ["dd", "if=/dev/zero", f"of={self.scratch}", "bs=1M", f"count={megabytes}",
             "conv=fdatasync"],
            check=True, capture_output=True, timeout=120,
            preexec_fn=lambda: self.add(os.getpid()))
        return megabytes * 1024 * 1024

    def remove(self) -> None:
        """Delete the scratch file, hand every process still inside back to the parent,
        then delete the cgroup."""
        self.scratch.unlink(missing_ok=True)
        for pid in self.pids():
            try:
                (self.path.parent / "cgroup.procs").write_text(str(pid))
            except OSError:  # it exited meanwhile
                pass
        self.path.rmdir()


@dataclass
class WarmPageCache:
    """What :func:`warm_page_cache` yields: the cgroup, or None when unavailable (then
    ``add`` and ``fill`` do nothing), and a description for the results."""

    cgroup: MemoryCgroup | None
    description: dict[str, Any]

    def add(self, pid: int) -> None:
        if self.cgroup is not None:
            self.cgroup.add(pid)

    def fill(self) -> None:
        """Call before each measured phase: a phase's own writes fill the cgroup again
        with its logs."""
        if self.cgroup is not None:
            self.description["scratch_bytes"] = self.cgroup.fill()


@contextmanager
def warm_page_cache(pids: Iterable[int], limit_bytes: int, scratch_dir: Path
                    ) -> Iterator[WarmPageCache]:
    """``pids`` (the brokers) in a new memory cgroup of ``limit_bytes`` for the block."""
    found = own_memory_cgroup(Path("/proc/self/cgroup").read_text(), CGROUP_ROOT)
    if found is None:
        yield WarmPageCache(None, {"unavailable": "no memory cgroup in /proc/self/cgroup"})
        return
    parent, version = found
    try:
        cgroup = MemoryCgroup.create(parent, version, f"bench-{os.getpid()}", limit_bytes,
                                     scratch_dir / "page-cache-scratch")
    except OSError as exc:
        yield WarmPageCache(None, {
            "unavailable": f"cannot create a memory cgroup under {parent}: {exc}"})
        return
    try:
        for pid in pids:
            cgroup.add(pid)
        yield WarmPageCache(cgroup, {"limit_bytes": limit_bytes, "cgroup_version": version})
    finally:
        cgroup.remove()
