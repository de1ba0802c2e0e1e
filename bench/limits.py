"""Operating-system limits that thousands of partitions or connections run into, raised
for the benchmark's own processes when this process may (root) and reported either way.

Why each matters:

* ``RLIMIT_NOFILE`` (``ulimit -n``): a broker holds one descriptor per connection and, per
  partition replica, its segment's ``.log`` file plus one per memory-mapped index (Python's
  ``mmap`` keeps a duplicate of the descriptor it mapped), so ~3 per replica: 30,000 RF 3
  partitions on three brokers are ~90,000 descriptors per broker.  Brokers, clients and
  the connection probe are children of this process and inherit its limit.
* ``vm.max_map_count``: every open index (offset and time) is one mapping, so two per
  replica, 60,000 per broker at 30,000 partitions, against Linux's default 65,530 per
  process (shared with the interpreter's own mappings).  It is machine-wide
  (``/proc/sys/vm/max_map_count``), so raising it changes this machine for everyone.
"""

from __future__ import annotations

import resource
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

MAX_MAP_COUNT = Path("/proc/sys/vm/max_map_count")
NR_OPEN = Path("/proc/sys/fs/nr_open")
# Descriptors and mappings per partition replica a broker holds (see the module doc).
DESCRIPTORS_PER_REPLICA = 3
MAPS_PER_REPLICA = 2
# Mappings a broker needs besides its indexes: the interpreter, its libraries, arenas.
MAP_HEADROOM = 20_000
# Descriptors a process needs besides partitions and client connections (each end of a
# connection is in a different process, so one per connection each): followers' and
# ZooKeeper's connections, the interpreter, librdkafka's clients.
BROKER_DESCRIPTOR_HEADROOM = 1_000


@dataclass(frozen=True)
class Limits:
    """What the limits were and are now; ``changes`` says what this run raised."""

    open_files: int
    max_map_count: int
    changes: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def raise_open_files(needed: int) -> str | None:
    """Raise this process's soft (and, when allowed, hard) descriptor limit to ``needed``,
    capped by the kernel's ``fs.nr_open``; return what changed (or why it could not), or
    None.  Raising the hard limit needs CAP_SYS_RESOURCE, which root in a container may
    lack: then the soft limit goes up to the hard one and the shortfall is reported."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return None
    ceiling = int(NR_OPEN.read_text()) if NR_OPEN.exists() else hard
    target = min(needed, ceiling)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, max(hard, target)))
    except (ValueError, OSError) as exc:
        target = min(target, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        if target < needed:
            return (f"ulimit -n {soft} -> {target}, short of the {needed} wanted: the hard "
                    f"limit {hard} could not be raised ({exc})")
    return f"ulimit -n {soft} -> {target} for the benchmark and the processes it starts"


def raise_max_map_count(needed: int) -> str | None:
    """Raise the machine's ``vm.max_map_count`` to ``needed`` when it is lower and this
    process may write it; return what changed (or why it could not), or None."""
    current = int(MAX_MAP_COUNT.read_text())
    if current >= needed:
        return None
    try:
        MAX_MAP_COUNT.write_text(str(needed))
    except OSError as exc:
        return f"vm.max_map_count {current} is below {needed} and could not be raised: {exc}"
    return f"vm.max_map_count {current} -> {needed} (machine-wide, left raised)"


def prepare_for(replicas_per_broker: int, connections: int = 0) -> Limits:
    """Make room for ``replicas_per_broker`` partition replicas and ``connections`` client
    connections in each broker (and the probe holding the other ends).  The machine-wide
    mapping limit is raised only for the replicas the descriptor limit lets a broker hold."""
    changes = [raise_open_files(DESCRIPTORS_PER_REPLICA * replicas_per_broker
                                + connections + BROKER_DESCRIPTOR_HEADROOM)]
    open_files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    holdable = min(replicas_per_broker, replica_capacity(open_files))
    changes.append(raise_max_map_count(MAPS_PER_REPLICA * holdable + MAP_HEADROOM))
    return Limits(open_files, int(MAX_MAP_COUNT.read_text()), tuple(c for c in changes if c))


def replica_capacity(open_files: int) -> int:
    """How many partition replicas a broker with this descriptor limit can hold."""
    return max(open_files - BROKER_DESCRIPTOR_HEADROOM, 0) // DESCRIPTORS_PER_REPLICA
