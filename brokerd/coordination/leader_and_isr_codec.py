"""The controller's LeaderAndIsr v5 requests, written by hand, and the one field of the
answer it reads.

Why not the generic codec (:mod:`brokerd.protocol.codec`): in a 30,000-partition failover
the controller pushes ~30,000 partition states, and building a dict per partition and
walking it with the schema-driven encoder, then decoding an answer with an entry per
partition, took a seventh of the controller's event loop while it also served its
followers' fetches and applied its own decisions (sampled profile, 2026-11-25).  Here
each state goes from :data:`~brokerd.coordination.state_push.Pending` straight to bytes.
:func:`encode_request` produces exactly the bytes the generic codec does for the same
request (``tests/unit/brokerd/coordination/test_leader_and_isr_codec.py`` compares them);
:func:`decode_response` reads only the top-level error code, the only field a push acts
on (per-partition errors only say a receiver left a state to its watches).

Malformed input raises :class:`~brokerd.protocol.ProtocolError`.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

from brokerd.coordination.znodes import PartitionState
from brokerd.protocol import ApiKey, ProtocolError
from brokerd.protocol.primitives import byte_view, read_flexible_response_header, write_uvarint

VERSION = 5
_HEADER = struct.Struct(">ihhih")  # size, api key, version, correlation id, client id length
_TOP = struct.Struct(">iiqb")  # controller id, controller epoch, broker epoch, type
_PARTITION = struct.Struct(">iiii")  # index, controller epoch, leader, leader epoch
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
# (topic, partition) -> (topic id, state, replicas, adding, removing), as state_push queues.
Entry = tuple[uuid.UUID, PartitionState, tuple[int, ...], tuple[int, ...], tuple[int, ...]]


class PushRequest(NamedTuple):
    """What one request carries: the sender, its epoch, and the states by partition."""

    controller_id: int
    controller_epoch: int
    states: dict[tuple[str, int], Entry]


# A compact int32 array of up to 7 elements (replica lists): its one-byte length and its
# values through one prepared struct (four per partition state, 120,000 per failover of
# 30,000 partitions).
_SHORT_INT32_ARRAYS = [struct.Struct(f">B{count}i") for count in range(8)]


def _int32s(out: bytearray, values: Sequence[int]) -> None:
    if len(values) < len(_SHORT_INT32_ARRAYS):
        out += _SHORT_INT32_ARRAYS[len(values)].pack(len(values) + 1, *values)
        return
    write_uvarint(out, len(values) + 1)
    out += struct.pack(f">{len(values)}i", *values)


def encode_request(correlation_id: int, client_id: str, body: PushRequest) -> bytearray:
    """A whole LeaderAndIsr v5 request frame, size prefix included; partitions in
    (topic, partition) order, grouped by topic; ``broker_epoch`` -1, ``type`` 0, no
    live leaders, ``is_new`` false (the fields the controller always sends so)."""
    client = client_id.encode()
    out = bytearray(_HEADER.pack(0, ApiKey.LEADER_AND_ISR, VERSION, correlation_id,
                                 len(client)))
    out += client
    out.append(0)  # header tagged fields
    out += _TOP.pack(body.controller_id, body.controller_epoch, -1, 0)
    by_topic: dict[str, list[tuple[int, Entry]]] = {}
    for (name, partition), entry in sorted(body.states.items()):
        by_topic.setdefault(name, []).append((partition, entry))
    write_uvarint(out, len(by_topic) + 1)
    for name, partitions in by_topic.items():
        encoded = name.encode()
        write_uvarint(out, len(encoded) + 1)
        out += encoded
        out += partitions[0][1][0].bytes  # the topic id
        write_uvarint(out, len(partitions) + 1)
        for partition, (_, state, replicas, adding, removing) in partitions:
            out += _PARTITION.pack(partition, state.controller_epoch, state.leader,
                                   state.leader_epoch)
            _int32s(out, state.isr)
            out += _INT32.pack(state.zk_version)  # the partition epoch
            _int32s(out, replicas)
            _int32s(out, adding)
            _int32s(out, removing)
            out += b"\0\0"  # is_new false, partition tagged fields
        out.append(0)  # topic tagged fields
    out += b"\x01\0"  # no live leaders, body tagged fields
    _INT32.pack_into(out, 0, len(out) - 4)
    return out


def decode_response(frame: bytes | bytearray | memoryview) -> tuple[int, dict[str, Any]]:
    """``(correlation_id, {"error_code": …})`` of a LeaderAndIsr v5 response frame (after
    the size prefix); the per-topic part is not read."""
    buf = byte_view(frame)
    try:
        correlation_id, pos = read_flexible_response_header(buf)
        (error_code,) = _INT16.unpack_from(buf, pos)
    except (struct.error, IndexError) as exc:
        raise ProtocolError(f"malformed LeaderAndIsr v5 response: {exc}") from exc
    return correlation_id, {"error_code": error_code}
