"""Bounds-checked readers and writers for the protocol's variable-length primitives.

Readers take ``(buf, pos)`` and return ``(value, new_pos)``; ``buf`` is a memoryview of
unsigned bytes.  Every length read from the wire is checked against the bytes that remain
before anything is sliced or allocated, so a hostile length prefix costs nothing.

Wire formats (all integers big-endian):
- unsigned varint: 7 bits per byte, least significant group first, high bit = "more follows";
  Kafka uses it for compact lengths and tags and never needs more than 32 bits (5 bytes).
- signed varint (records only): zigzag-mapped then unsigned varint, up to 64 bits (10 bytes).
- STRING: int16 length (-1 = null) + UTF-8; COMPACT_STRING: uvarint(length + 1) (0 = null).
- BYTES: int32 length (-1 = null); COMPACT_BYTES: uvarint(length + 1) (0 = null).
- ARRAY: int32 count (-1 = null); COMPACT_ARRAY: uvarint(count + 1) (0 = null).
"""

from __future__ import annotations

import struct

from brokerd.protocol.errors import ProtocolError

INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")


def read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    """Read an unsigned varint of at most 5 bytes (32 bits)."""
    result = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise ProtocolError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 35:
            raise ProtocolError("unsigned varint longer than 5 bytes")


def write_uvarint(out: bytearray, value: int) -> None:
    """Append ``value`` (0 <= value < 2**32) as an unsigned varint."""
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def read_varlong(buf: memoryview, pos: int) -> tuple[int, int]:
    """Read a zigzag signed varint of at most 10 bytes (used inside record batches)."""
    result = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise ProtocolError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            # Zigzag: even n encodes n/2, odd n encodes -(n+1)/2.
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift >= 70:
            raise ProtocolError("signed varint longer than 10 bytes")


def write_varlong(out: bytearray, value: int) -> None:
    """Append a signed 64-bit integer as a zigzag varint."""
    write_uvarint64(out, (value << 1) ^ (value >> 63))


def write_uvarint64(out: bytearray, value: int) -> None:
    """Append an unsigned integer of up to 64 bits as a varint."""
    value &= 0xFFFFFFFFFFFFFFFF
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def read_length(buf: memoryview, pos: int, compact: bool, wide: bool) -> tuple[int, int]:
    """Read a length or count prefix; -1 means null.

    ``wide`` selects int32 over int16 for the non-compact form (bytes and arrays are int32,
    strings int16).  The result is checked against the remaining bytes by the caller.
    """
    if compact:
        raw, pos = read_uvarint(buf, pos)
        return raw - 1, pos
    prefix = INT32 if wide else INT16
    if pos + prefix.size > len(buf):
        raise ProtocolError("truncated length prefix")
    return prefix.unpack_from(buf, pos)[0], pos + prefix.size


def check_room(buf: memoryview, pos: int, length: int) -> int:
    """Return the end of a ``length``-byte item at ``pos``, or raise if it overruns."""
    if length < 0:
        raise ProtocolError(f"negative length {length}")
    end = pos + length
    if end > len(buf):
        raise ProtocolError(f"length {length} overruns the frame ({len(buf) - pos} left)")
    return end


def write_length(out: bytearray, length: int, compact: bool, wide: bool) -> None:
    """Append a length/count prefix (``length`` may be -1 for null)."""
    if compact:
        if length < 0x7F:
            out.append(length + 1)  # the common case: a one-byte varint
        else:
            write_uvarint(out, length + 1)
    else:
        out += (INT32 if wide else INT16).pack(length)


def skip_tagged_fields(buf: memoryview, pos: int) -> int:
    """Skip a tagged-field section (count, then tag/size/data triples) nobody asked for."""
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos = check_room(buf, pos, size)
    return pos


def byte_view(frame: bytes | bytearray | memoryview) -> memoryview:
    """A flat unsigned-byte view, which every reader indexes as ``buf[i] -> int``."""
    buf = memoryview(frame)
    if buf.format != "B" or buf.ndim != 1:
        buf = buf.cast("B")
    return buf


def read_flexible_response_header(buf: memoryview) -> tuple[int, int]:
    """``(correlation_id, body position)`` of a response frame with a flexible header (v1:
    the correlation id, then tagged fields).  Raises ``struct.error`` or ``ProtocolError``
    on truncation; each reader names its message in the error it raises."""
    (correlation_id,) = INT32.unpack_from(buf, 0)
    return correlation_id, skip_tagged_fields(buf, 4)
