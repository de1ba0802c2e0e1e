"""A bounded LRU cache of the descriptors segment files hold (Kafka's lazy indexes, plus
``.log`` files opened on demand), so an idle partition replica holds no descriptor.

Why: the descriptor limit (``ulimit -n``) is per process, and without this each replica
holds three for good: its active segment's ``.log`` and, because Python's ``mmap`` keeps
a duplicate of the descriptor it mapped, one per memory-mapped index (offset and time).
With the cache, a segment's ``.log`` is opened and an index mapped on first use and
closed (unmapped) when the cache is over its budget and it is the least recently used,
so the broker holds at most ``log.max.open.files`` of them whatever its partition count.

Safety: a :class:`CachedFile` is used only while *pinned* (``with item as handle:``,
:meth:`CachedFile.pin`, a :class:`FilePin` that a fetch response's file regions hold
until they are written, or a writer's hold, below), and the cache never closes a pinned
one: with every file pinned the cache runs over its budget rather than close a
descriptor under an in-flight read, fsync or sendfile. Closing is deferred the same way
when the owner *retires* a file (its segment was deleted or closed). Reopening uses the
current path (renames go through :meth:`OpenFileCache.rename`, under the same lock, so a
reopen never sees a stale name) and never creates a file: only the first open does.

Writers' holds: a pin costs a lock round trip and an LRU move, and a small produce
request pinned the active segment's ``.log`` and an index once each, a measurable share
of its CPU. So the active segment's writer *holds* its files instead
(:meth:`CachedFile.hold`, on every append): the first hold pins the file and takes it out
of the LRU order, later ones only mark it used, and the writer then uses the handle
without a pin of its own. The holding thread's sweep (:meth:`OpenFileCache.release_idle`,
which the broker's housekeeper calls every second on the event loop, the thread that
appends) releases the holds on files unused since its previous sweep, so an idle
partition's files are unpinned again within two sweeps; sealing a segment (it stopped
being active) and retiring a file release its holds at once. At most half the budget is
held (beyond that a writer pins per use, as everyone else), so holds alone never push
the cache over its budget, and 30,000 partitions written now and then do not pin 90,000
files. Only the holding thread uses a held file without a pin and only it (or retiring)
releases the hold, so no other thread can close a descriptor under that use.

Thread-safety: every transition (open, pin, unpin, hold, release, close, rename) happens
under one lock, so the loop thread, flush workers and cleaner threads may share the
cache. The budget is per process because the descriptor limit is: :data:`OPEN_FILES` is
the process's cache, sized by the broker from its config (:func:`default_max_open_files`
otherwise).
"""

from __future__ import annotations

import logging
import os
import resource
import threading
from collections import OrderedDict
from pathlib import Path
from types import TracebackType
from typing import Any

log = logging.getLogger(__name__)


def default_max_open_files() -> int:
    """Half the soft descriptor limit: the other half is left for client connections,
    replication and ZooKeeper sockets, and everything else a broker opens."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(soft // 2, 1)


class OpenFileCache:
    """Keeps at most ``max_open`` unpinned :class:`CachedFile` open, closing the least
    recently used first, and lets writers hold up to half of them (module docstring)."""

    def __init__(self, max_open: int) -> None:
        if max_open < 1:
            raise ValueError(f"max open files must be >= 1, not {max_open}")
        self.max_open = max_open
        self._lock = threading.RLock()  # a FilePin may be collected while it is held
        self._open: OrderedDict[CachedFile, None] = OrderedDict()  # not held; LRU first
        self._held: dict[CachedFile, int] = {}  # held file -> the holding thread's id
        # While eviction walks ``_open``, a FilePin collected by the garbage collector in
        # this very thread must not change it: such closes wait here until the walk ends.
        self._evicting = False
        self._deferred: list[CachedFile] = []
        self.opens = 0  # files opened (first opens and reopens): for metrics and tests
        self.evictions = 0  # files closed to stay within the budget

    @property
    def open_count(self) -> int:
        return len(self._open) + len(self._held)

    @property
    def held_count(self) -> int:
        return len(self._held)

    def resize(self, max_open: int) -> None:
        """A new budget (the broker's ``log.max.open.files``); excess files close now."""
        if max_open < 1:
            raise ValueError(f"max open files must be >= 1, not {max_open}")
        with self._lock:
            self.max_open = max_open
            self._evict()

    def pin(self, item: CachedFile) -> None:
        """Open ``item`` if it is not, mark it most recently used, and hold it open until
        the matching :meth:`unpin`; ValueError once it was retired."""
        with self._lock:
            if item.retired:
                raise ValueError(f"{item.path} is closed")
            if item.held:  # open, and out of the LRU order while held
                item.pins += 1
                return
            if item in self._open:
                self._open.move_to_end(item)
                item.pins += 1
                return
            item.open_now()
            self._open[item] = None
            self.opens += 1
            item.pins += 1  # before evicting: the file just opened is not a candidate
            self._evict()

    def unpin(self, item: CachedFile) -> None:
        with self._lock:
            item.pins -= 1
            if item.pins:
                return
            if item.retired:
                self._close(item)
            elif self.open_count > self.max_open:  # pins had held the cache over its budget
                self._evict()

    def hold(self, item: CachedFile) -> None:
        """Pin ``item`` for the calling thread, its writer, until this thread's
        :meth:`release_idle` finds it unused or it is released or retired; nothing (the
        writer pins per use) while half the budget is held already. ValueError once
        retired."""
        if len(self._held) >= self.max_open // 2:  # a hint without the lock; checked below
            return
        with self._lock:
            if item.held or len(self._held) >= self.max_open // 2:
                return
            self.pin(item)  # opens it if need be, and puts it last in the LRU order
            del self._open[item]
            self._held[item] = threading.get_ident()
            item.held = True

    def release(self, item: CachedFile) -> None:
        """Drop the writer's hold on ``item`` (if any): it is pinned no more by it."""
        with self._lock:
            if item.held:
                self._release(item)

    def release_idle(self) -> int:
        """The writer thread's sweep: release the holds this thread took on files it has
        not used since its previous sweep; returns how many it released."""
        me = threading.get_ident()
        with self._lock:
            idle = []
            for item, holder in self._held.items():
                if holder != me:
                    continue
                if item.used:
                    item.used = False
                else:
                    idle.append(item)
            for item in idle:
                self._release(item)
        return len(idle)

    def retire(self, item: CachedFile) -> None:
        """The owner is done with ``item``: close it now, or when its last pin goes."""
        with self._lock:
            item.retired = True
            if item.held:
                self._release(item)  # closes it unless someone else pins it
            elif not item.pins:
                self._close(item)

    def rename(self, item: CachedFile, path: Path) -> None:
        """Rename ``item``'s file; an open descriptor or mapping stays valid."""
        with self._lock:
            os.replace(item.path, path)
            item.path = path

    def _release(self, item: CachedFile) -> None:
        del self._held[item]
        item.held = False
        self._open[item] = None  # most recently used: it was used within two sweeps
        self.unpin(item)

    def _evict(self) -> None:
        excess = self.open_count - self.max_open
        if excess <= 0 or self._evicting:  # a collected FilePin inside a walk: it finishes
            return
        victims = []
        self._evicting = True
        try:
            for item in self._open:
                if not item.pins:
                    victims.append(item)
                    if len(victims) == excess:
                        break
        finally:
            self._evicting = False
        for item in victims + self._deferred:
            self._close(item)
        self.evictions += len(victims)
        self._deferred.clear()

    def _close(self, item: CachedFile) -> None:
        if self._evicting:
            self._deferred.append(item)
        elif item in self._open:
            del self._open[item]
            try:
                item.close_now()
            except OSError as exc:  # e.g. a failed disk: the descriptor is gone anyway
                log.warning("closing %s: %s", item.path, exc)


class CachedFile:
    """A file the cache opens on demand: subclasses say what holding it open means.

    ``with item as handle:`` pins it for the block and gives the subclass's handle (a
    descriptor, a mapping); the block must not outlive the owner's use of it.
    """

    def __init__(self, path: Path, cache: OpenFileCache) -> None:
        self.path = path
        self.pins = 0
        self.retired = False
        self.held = False  # a writer holds it (see OpenFileCache.hold): it is pinned
        self.used = False  # used through the hold since the holder's last sweep
        self._cache = cache
        self._created = False

    # -- subclass hooks (called under the cache's lock) -----------------------------------
    def open_now(self) -> None:
        raise NotImplementedError

    def close_now(self) -> None:
        raise NotImplementedError

    def handle(self) -> Any:
        raise NotImplementedError

    def open_descriptor(self) -> int:
        """A read-write descriptor of the file: the first open creates it, a reopen must
        find it (a vanished file is an error, not a new empty file)."""
        flags = os.O_RDWR if self._created else os.O_RDWR | os.O_CREAT
        fd = os.open(self.path, flags, 0o644)
        self._created = True
        return fd

    # -- use ----------------------------------------------------------------------------
    def pin(self) -> None:
        self._cache.pin(self)

    def unpin(self) -> None:
        self._cache.unpin(self)

    def hold(self) -> None:
        """Called by the writer on every use: keep the file pinned for it until its
        thread's sweep finds it unused (:meth:`OpenFileCache.hold`). While :attr:`held`,
        the writer (only it) may use :meth:`handle` without pinning."""
        self.used = True
        if not self.held:
            self._cache.hold(self)

    def release(self) -> None:
        if self.held:  # only the holder (or a retire) clears it
            self._cache.release(self)

    def retire(self) -> None:
        self._cache.retire(self)

    def rename(self, path: Path) -> None:
        self._cache.rename(self, path)

    def __enter__(self) -> Any:
        self._cache.pin(self)
        return self.handle()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._cache.unpin(self)


class SegmentFile(CachedFile):
    """A segment's ``.log`` file; its handle is the descriptor."""

    def __init__(self, path: Path, cache: OpenFileCache) -> None:
        super().__init__(path, cache)
        self.fd = -1

    def open_now(self) -> None:
        self.fd = self.open_descriptor()

    def close_now(self) -> None:
        fd, self.fd = self.fd, -1
        os.close(fd)

    def handle(self) -> int:
        return self.fd


class FilePin:
    """Holds a :class:`CachedFile` open for as long as this object lives: a fetch
    response's file regions carry one, so the descriptor a sendfile will use stays open
    until the response was written (or dropped) whatever the cache does meanwhile."""

    __slots__ = ("_item",)

    def __init__(self, item: CachedFile) -> None:
        item.pin()
        self._item = item

    def __del__(self) -> None:
        item = getattr(self, "_item", None)  # unset when pin() raised
        if item is not None:
            item.unpin()


OPEN_FILES = OpenFileCache(default_max_open_files())
