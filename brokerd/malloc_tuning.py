"""Keep large request buffers off mmap, so receiving a big produce request costs no page faults.

Each request frame larger than the connection's read buffer gets a ``bytearray`` of its own
(``server/connection.py``). glibc serves allocations above its mmap threshold (128 KiB at
first, adjusted dynamically) with fresh ``mmap`` pages and unmaps them on free, so every 1 MB
produce request paid for ~256 zero-filled page faults: 20–25 % of the broker's CPU in
``make bench --profile produce-1k``. Raising the threshold (and the heap-trim threshold with
it) makes those buffers come from the heap and be reused. Memory stays bounded by the
per-connection backlog limits; the heap keeps up to ``TRIM_THRESHOLD`` bytes free.

A no-op where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's maximum on 64-bit is 32 MiB
TRIM_THRESHOLD = 128 * 1024 * 1024


def tune_malloc() -> bool:
    """Apply the thresholds; True when glibc accepted them."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    applied = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    if not applied:
        log.warning("malloc tuning refused; large requests will use mmap'ed buffers")
    return applied
