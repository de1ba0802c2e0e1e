"""One partition replica hosted by this broker: its log, leader epoch and high watermark.

Why a layer above the log: leadership is not a property of bytes on disk.  The log stores
batches; the :class:`Partition` knows which epoch it leads in (stamped into every batch it
appends) and how far consumers may read (the high watermark).  With a single replica the
high watermark is the log end offset after every append; with followers it will become
the minimum log end offset of the in-sync replicas, computed here and nowhere else.

Not thread-safe: used from the asyncio loop thread only.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from brokerd.storage import AppendResult, Log

AppendListener = Callable[[], None]


class Partition:
    """A partition this broker leads (followers arrive with the replication issue)."""

    def __init__(self, topic: str, index: int, topic_id: uuid.UUID, log: Log,
                 leader_epoch: int) -> None:
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.leader_epoch = leader_epoch
        self._append_listeners: set[AppendListener] = set()
        log.high_watermark_follows_log_end = False  # this object owns the high watermark
        self._advance_high_watermark()

    @property
    def high_watermark(self) -> int:
        return int(self.log.high_watermark)

    @property
    def log_start_offset(self) -> int:
        return int(self.log.log_start_offset)

    @property
    def log_end_offset(self) -> int:
        return int(self.log.log_end_offset)

    def append_as_leader(self, records: memoryview) -> AppendResult:
        """Append a produce request's record set, advance the high watermark, wake readers.

        Raises the storage errors (each with an ``error_code``) unchanged; nothing is
        stored when one is raised.
        """
        result = self.log.append_as_leader(records, self.leader_epoch)
        if not result.duplicate:
            self._advance_high_watermark()
            for listener in list(self._append_listeners):
                listener()
        return result

    def _advance_high_watermark(self) -> None:
        # Single replica: the ISR is {self}, so min(LEO of ISR) is our own log end offset.
        self.log.high_watermark = self.log.log_end_offset

    def add_append_listener(self, listener: AppendListener) -> None:
        """Call ``listener()`` after every (non-duplicate) append until removed."""
        self._append_listeners.add(listener)

    def remove_append_listener(self, listener: AppendListener) -> None:
        self._append_listeners.discard(listener)

    def become_leader(self, leader_epoch: int) -> None:
        """A newer leadership epoch for the same replica (e.g. after re-election)."""
        self.leader_epoch = max(self.leader_epoch, leader_epoch)
