"""Partition-state changes through one persistent recursive watch (ZooKeeper 3.6+
``addWatch``) instead of a one-shot watch per state node.

Why: a one-shot watch is re-armed only by reading its node again, so every change of a
partition state cost every broker one ZooKeeper read, even when the controller had already
pushed the new state (:mod:`.state_feed`) or written it itself: after a failover at 30,000
partitions, 30,000 reads on each broker, whose kazoo work held the GIL and stalled the
event loops for about 2 s (bench/README.md).  A persistent watch stays armed and notifies
every change, one notification per new version, so a broker knows each node's version
without reading it: the version its last read answered, plus one per change notified
since.  A pushed or own-written state at that version or newer needs no read
(:meth:`StateWatch.covered`).

Why that version is exact: ZooKeeper sends a session's notifications and answers in order,
and the notification of a change before any answer that shows it.  kazoo reads both on one
connection thread, so a read (:meth:`StateWatch.read_async`) records its node's version
while its answer is decoded: notifications before it are of versions the answer shows,
later ones each add one.  A creation or a deletion restarts versions, so it drops the
node's version, which only a new read sets again.

kazoo 2.11 has no call for ``addWatch`` and hands notifications only to the one-shot
watchers it registered itself, so this module sends the request and wraps the connection's
event reader: kazoo internals, hence kazoo's exact pin in pyproject.toml; the tests use
both against the real server.  The wrapper also takes the notifications already waiting
in the connection's buffer right behind the one kazoo read (never further than the first
message of another kind, so the stream's order holds): kazoo's loop costs a ``poll`` and
its bookkeeping per message, and a failover brings a burst of 30,000.  Like kazoo's
one-shot watches the watch goes with the connection; the coordinator adds it again before
re-reading every topic.

Threads: notifications are applied and reported on kazoo's connection thread; the rest is
called from the coordinator's ZooKeeper thread.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import UnimplementedError
from kazoo.protocol.connection import CHANGED_EVENT, WATCH_XID
from kazoo.protocol.serialization import GetData, Watch, int_struct, write_string

from brokerd.coordination import znodes
from brokerd.coordination.zk_handler import BufferedSocket

ADD_WATCH_OPCODE = 106  # ZooKeeper's OpCode.addWatch
REPLY_HEADER_BYTES = 16  # xid, zxid, err: where a notification's event starts
PERSISTENT_RECURSIVE = 1  # AddWatchMode.PERSISTENT_RECURSIVE
# (topic, partition, changed): changed is False for a creation or a deletion (the version
# became unknown, so the node must be read).
OnChange = Callable[[str, int, bool], None]
Key = tuple[str, int]


class ZooKeeperTooOldError(RuntimeError):
    """The server has no persistent watches (ZooKeeper before 3.6)."""


class _AddWatch(namedtuple("_AddWatch", "path mode")):
    type = ADD_WATCH_OPCODE

    def serialize(self) -> bytearray:
        request = bytearray(write_string(self.path))
        request.extend(int_struct.pack(self.mode))
        return request

    @classmethod
    def deserialize(cls, buffer: bytes, offset: int) -> bool:
        return True  # the answer is the reply header alone


class _VersionedRead(namedtuple("_VersionedRead", "path key versions")):
    """A getData without a watch that records the version it answered in ``versions``
    when kazoo decodes it (on the connection thread, in order with notifications)."""

    type = GetData.type

    def serialize(self) -> bytearray:
        request = bytearray(write_string(self.path))
        request.append(0)  # no one-shot watch
        return request

    def deserialize(self, buffer: bytes, offset: int) -> tuple[bytes, Any]:
        data, stat = GetData.deserialize(buffer, offset)
        self.versions[self.key] = stat.version
        return data, stat


class StateWatch:
    """The version of every partition-state node read since its last creation, kept
    current by the notifications."""

    def __init__(self, client: KazooClient, on_change: OnChange) -> None:
        self._client = client
        self._on_change = on_change
        self._versions: dict[Key, int] = {}
        self._prefix = ""
        self._hooked = False

    def add(self, timeout_s: float = 10.0) -> None:
        """Arm the watch on the topics' subtree: at start and after each reconnection, and
        before the reads it is to cover."""
        self._prefix = self._client.chroot + znodes.TOPICS + "/"
        self._hook()
        result = self._client.handler.async_result()
        self._client._call(_AddWatch(self._prefix.rstrip("/"), PERSISTENT_RECURSIVE), result)
        try:
            result.get(timeout=timeout_s)
        except UnimplementedError as exc:
            raise ZooKeeperTooOldError(
                "ZooKeeper 3.6 or newer is required (persistent watches, addWatch)") from exc

    def read_async(self, topic: str, partition: int) -> Any:
        """Read a state node without a one-shot watch; ``.get()`` gives ``(data, stat)``
        like kazoo's ``get_async``."""
        key = (topic, partition)
        path = self._client.chroot + znodes.partition_state_path(topic, partition)
        result = self._client.handler.async_result()
        self._client._call(_VersionedRead(path, key, self._versions), result)
        return result

    def covered(self, topic: str, partition: int, known_version: int) -> bool:
        """Whether a state at ``known_version`` shows every change of the node notified
        so far (False when the node was never read, or created or deleted since)."""
        version = self._versions.get((topic, partition))
        return version is not None and known_version >= version

    def forget(self, topic: str) -> None:
        """Drop a deleted topic's versions (dropping one only forces a read)."""
        for key in [key for key in list(self._versions) if key[0] == topic]:
            self._versions.pop(key, None)

    def _hook(self) -> None:
        if self._hooked:
            return
        client = self._client
        connection = client._connection
        read_event = connection._read_watch_event

        def deliver(buffer: bytes, offset: int) -> None:
            path = self._notified(buffer, offset)
            if (path is None or path in client._data_watchers
                    or path in client._child_watchers):
                read_event(buffer, offset)  # else kazoo has nobody to hand the event to

        def read_watch_event(buffer: bytes, offset: int) -> None:
            deliver(buffer, offset)
            sock = connection._socket
            if isinstance(sock, BufferedSocket):  # see the module doc
                while (message := sock.take_buffered_message(WATCH_XID)) is not None:
                    deliver(message, REPLY_HEADER_BYTES)

        connection._read_watch_event = read_watch_event
        self._hooked = True

    def _notified(self, buffer: bytes, offset: int) -> str | None:
        """Connection thread: advance (or drop) a state node's version and report it;
        returns the node's path (None for any other node's event).

        Why kazoo then skips the event (unless one of its own watches is on the node):
        it would decode it again and build an event for nobody, and a failover notifies
        every broker of every state node: 30,000 notifications cost the connection
        thread 0.57-0.60 s of CPU without that, 0.69-0.77 s with it
        (``python -m bench.zk_notifications``, buffered)."""
        event, _ = Watch.deserialize(buffer, offset)
        path: str = event.path
        if not path.startswith(self._prefix) or not path.endswith("/state"):
            return None
        parts = path[len(self._prefix):].split("/")
        if len(parts) != 4 or parts[1] != "partitions" or not parts[2].isdigit():
            return None
        key = (parts[0], int(parts[2]))
        changed = event.type == CHANGED_EVENT
        version = self._versions.pop(key, None)
        if changed and version is not None:
            self._versions[key] = version + 1
        self._on_change(key[0], key[1], changed)
        return path

