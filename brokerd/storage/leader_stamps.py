"""What a leader writes into the batches it appends: offsets, its leader epoch and, for
LogAppendTime topics, the append time — in place, header fields only (pure).

Why apart from the log: this is the whole of the leader's say over a producer's bytes
(Kafka's ``LogValidator`` assigning offsets), and the one place transaction markers are
built the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from brokerd.protocol.records import (
    BatchHeader,
    parse_batch_header,
    patch_base_offset,
    patch_partition_leader_epoch,
    set_log_append_time,
)
from brokerd.storage.transactions import marker_batch


def stamp(buffer: bytearray | memoryview, positions: Iterable[int], first_offset: int,
          leader_epoch: int, append_time: int) -> list[BatchHeader]:
    """Number the batches starting at ``positions`` from ``first_offset`` on, stamp
    ``leader_epoch`` (and ``append_time`` unless it is -1) into them; their new headers."""
    headers: list[BatchHeader] = []
    offset = first_offset
    for position in positions:
        patch_base_offset(buffer, position, offset)
        patch_partition_leader_epoch(buffer, position, leader_epoch)
        if append_time >= 0:
            set_log_append_time(buffer, position, append_time)
        headers.append(parse_batch_header(buffer, position))
        offset = headers[-1].last_offset + 1
    return headers


def stamped_marker(producer_id: int, producer_epoch: int, commit: bool,
                   coordinator_epoch: int, now_ms: int, offset: int,
                   leader_epoch: int) -> tuple[bytearray, BatchHeader]:
    """A commit or abort control batch at ``offset`` in ``leader_epoch``, and its header."""
    buffer = bytearray(marker_batch(producer_id, producer_epoch, commit, coordinator_epoch,
                                    now_ms))
    return buffer, stamp(buffer, [0], offset, leader_epoch, -1)[0]
