"""The consumer protocol's embedded formats (ConsumerProtocolSubscription/Assignment v0).

Classic groups carry these as opaque bytes; DescribeGroups of a consumer-protocol group
shows its members in the same formats, so tools that only speak the classic API (and the
lag views built on them) read both kinds of group alike.  Layout, never flexible:
version INT16, then topics ARRAY(STRING) (subscription) or ARRAY(topic STRING, partitions
ARRAY(INT32)) (assignment), then user data BYTES (null).
"""

from __future__ import annotations

import struct

_HEADER = struct.Struct(">hi")
_NULL_BYTES = struct.pack(">i", -1)


def _string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def subscription(topics: list[str]) -> bytes:
    return (_HEADER.pack(0, len(topics)) + b"".join(_string(t) for t in topics)
            + _NULL_BYTES)


def assignment(partitions: dict[str, list[int]]) -> bytes:
    out = bytearray(_HEADER.pack(0, len(partitions)))
    for topic, indexes in sorted(partitions.items()):
        out += _string(topic) + struct.pack(f">i{len(indexes)}i", len(indexes), *sorted(indexes))
    return bytes(out + _NULL_BYTES)
