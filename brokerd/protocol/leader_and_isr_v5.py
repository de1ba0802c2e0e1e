"""The receiver's reading of a LeaderAndIsr v5 request, by hand.

Why not the generic codec (:mod:`brokerd.protocol.codec`): in a failover at 30,000
partitions each broker receives ~15 pushes of 2,000 partition states
(:mod:`brokerd.coordination.state_push`), and the schema-driven decoder took 68 ms per
push on this 2-core machine, a second of the event loop per failover while it was also
taking over thousands of leaderships (stall samples of ``bench.sampled_broker``,
2026-12-04).  The controller's side, writing the request, is
:mod:`brokerd.coordination.leader_and_isr_codec`.

:func:`decode_request_body` serves only the usual shape (no tagged field anywhere, no
null array or string) and returns None for anything else, so
:mod:`~brokerd.protocol.codec` falls back to the generic decoder, which then decides
(errors included): what it does return is what the generic decoder would
(``tests/unit/brokerd/protocol/test_leader_and_isr_v5.py`` compares them).
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from brokerd.protocol.primitives import read_uvarint

VERSION = 5
_TOP = struct.Struct(">iiqb")  # controller id, controller epoch, broker epoch, type
_PARTITION = struct.Struct(">iiii")  # index, controller epoch, leader, leader epoch
_INT32 = struct.Struct(">i")
# int32 arrays of these lengths (replica lists) unpack through a prepared struct each
_INT32_ARRAYS = [struct.Struct(f">{count}i") for count in range(8)]


def decode_request_body(buf: memoryview, pos: int) -> dict[str, Any] | None:
    """The body of a LeaderAndIsr v5 request starting at ``pos`` (after the header), as
    the generic decoder returns it; None when it is not the usual shape or does not
    parse."""
    try:
        controller_id, controller_epoch, broker_epoch, type_ = _TOP.unpack_from(buf, pos)
        count, pos = _read_count(buf, pos + _TOP.size)
        topic_states = []
        for _ in range(count):
            name, pos = _read_compact_string(buf, pos)
            topic_id = uuid.UUID(bytes=bytes(buf[pos:pos + 16]))
            partitions_count, pos = _read_count(buf, pos + 16)
            partitions = []
            for _ in range(partitions_count):
                index, state_epoch, leader, leader_epoch = _PARTITION.unpack_from(buf, pos)
                isr, pos = _read_int32s(buf, pos + _PARTITION.size)
                (partition_epoch,) = _INT32.unpack_from(buf, pos)
                replicas, pos = _read_int32s(buf, pos + 4)
                adding, pos = _read_int32s(buf, pos)
                removing, pos = _read_int32s(buf, pos)
                is_new = buf[pos]
                if is_new > 1:
                    return None
                pos = _untagged(buf, pos + 1)
                partitions.append({
                    "partition_index": index, "controller_epoch": state_epoch,
                    "leader": leader, "leader_epoch": leader_epoch, "isr": isr,
                    "partition_epoch": partition_epoch, "replicas": replicas,
                    "adding_replicas": adding, "removing_replicas": removing,
                    "is_new": bool(is_new)})
            pos = _untagged(buf, pos)
            topic_states.append({"topic_name": name, "topic_id": topic_id,
                                 "partition_states": partitions})
        count, pos = _read_count(buf, pos)
        live_leaders = []
        for _ in range(count):
            (broker_id,) = _INT32.unpack_from(buf, pos)
            host, pos = _read_compact_string(buf, pos + 4)
            (port,) = _INT32.unpack_from(buf, pos)
            pos = _untagged(buf, pos + 4)
            live_leaders.append({"broker_id": broker_id, "host_name": host, "port": port})
        _untagged(buf, pos)
    except (struct.error, IndexError, ValueError):
        return None
    return {"controller_id": controller_id, "controller_epoch": controller_epoch,
            "broker_epoch": broker_epoch, "type": type_, "topic_states": topic_states,
            "live_leaders": live_leaders}


def _read_count(buf: memoryview, pos: int) -> tuple[int, int]:
    """A non-null compact array's length; ValueError for a null one."""
    count, pos = read_uvarint(buf, pos)
    if count == 0:
        raise ValueError("a null array")
    return count - 1, pos


def _read_int32s(buf: memoryview, pos: int) -> tuple[list[int], int]:
    count = buf[pos] - 1  # a replica list's length fits the varint's first byte
    if not 0 <= count < len(_INT32_ARRAYS):
        count, pos = _read_count(buf, pos)
        end = pos + 4 * count
        if end > len(buf):
            raise ValueError("an array past the end")
        return list(struct.unpack_from(f">{count}i", buf, pos)), end
    return list(_INT32_ARRAYS[count].unpack_from(buf, pos + 1)), pos + 1 + 4 * count


def _untagged(buf: memoryview, pos: int) -> int:
    """Past an empty tagged-field section; ValueError when it holds any field."""
    if buf[pos]:
        raise ValueError("tagged fields")
    return pos + 1


def _read_compact_string(buf: memoryview, pos: int) -> tuple[str, int]:
    """A non-null compact string; ValueError for a null one or one past the end."""
    length, pos = read_uvarint(buf, pos)
    end = pos + length - 1
    if length == 0 or end > len(buf):
        raise ValueError("not a string here")
    return str(buf[pos:end], "utf-8"), end
