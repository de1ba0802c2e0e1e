"""ConsumerGroupDescribe (API 69, version 0) on the wire: the request's bytes, the answer parsed.

confluent-kafka's ``describe_consumer_groups`` shows a consumer-protocol (KIP-848) group's
type, assignor and current/target assignments, but not its group epoch, assignment epoch or
the members' epochs, which are what tells a viewer whether the group has reconciled.  So the
console sends this one request itself (``kafka.py`` does the I/O, to the coordinator
confluent-kafka found); this module is pure: bytes in, dataclasses out.

Version 0 is flexible (KIP-482): request header v2, response header v1, compact strings and
arrays, tagged fields (skipped).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

API_KEY = 69
API_VERSION = 0

TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[TopicPartitionKey, ...]
    target_assignment: tuple[TopicPartitionKey, ...]


@dataclass(frozen=True)
class DescribedGroup:
    error_code: int
    error_message: str | None
    group_id: str
    group_state: str  # Kafka's names: Empty, Assigning, Reconciling, Stable, Dead
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: tuple[DescribedMember, ...]


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _compact_string(value: str) -> bytes:
    data = value.encode()
    return _uvarint(len(data) + 1) + data


def encode_request(correlation_id: int, client_id: str, group_ids: list[str]) -> bytes:
    """The size-prefixed request: header v2 (client id as a classic nullable string, then an
    empty tag buffer), group ids, include_authorized_operations=false, empty tag buffer."""
    client = client_id.encode()
    header = struct.pack(">hhih", API_KEY, API_VERSION, correlation_id, len(client)) + client + b"\0"
    body = (_uvarint(len(group_ids) + 1) + b"".join(_compact_string(g) for g in group_ids)
            + b"\0" + b"\0")
    message = header + body
    return struct.pack(">i", len(message)) + message


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, size: int) -> bytes:
        if self.at + size > len(self.data):
            raise ValueError("ConsumerGroupDescribe response ends early")
        chunk = self.data[self.at:self.at + size]
        self.at += size
        return chunk

    def int16(self) -> int:
        return int(struct.unpack(">h", self.take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def nullable_string(self) -> str | None:
        length = self.uvarint() - 1
        return None if length < 0 else self.take(length).decode()

    def string(self) -> str:
        return self.nullable_string() or ""

    def count(self) -> int:
        """A compact array's length (null arrays read as empty)."""
        return max(0, self.uvarint() - 1)

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.take(self.uvarint())


def _assignment(reader: _Reader) -> tuple[TopicPartitionKey, ...]:
    partitions = []
    for _ in range(reader.count()):
        reader.take(16)  # topic id: the name follows
        topic = reader.string()
        partitions += [(topic, reader.int32()) for _ in range(reader.count())]
        reader.skip_tags()
    reader.skip_tags()
    return tuple(sorted(partitions))


def _member(reader: _Reader) -> DescribedMember:
    member_id, instance_id, rack_id = reader.string(), reader.nullable_string(), reader.nullable_string()
    member_epoch, client_id, client_host = reader.int32(), reader.string(), reader.string()
    names = tuple(reader.string() for _ in range(reader.count()))
    regex = reader.nullable_string()
    assignment, target = _assignment(reader), _assignment(reader)
    reader.skip_tags()
    return DescribedMember(member_id, instance_id, rack_id, member_epoch, client_id, client_host,
                           names, regex, assignment, target)


def decode_response(payload: bytes) -> tuple[int, list[DescribedGroup]]:
    """(correlation id, groups) from a response without its size prefix."""
    reader = _Reader(payload)
    correlation_id = reader.int32()
    reader.skip_tags()
    reader.int32()  # throttle_time_ms
    groups = []
    for _ in range(reader.count()):
        error_code, error_message = reader.int16(), reader.nullable_string()
        group_id, state = reader.string(), reader.string()
        group_epoch, assignment_epoch, assignor = reader.int32(), reader.int32(), reader.string()
        members = tuple(_member(reader) for _ in range(reader.count()))
        reader.int32()  # authorized_operations (not asked for)
        reader.skip_tags()
        groups.append(DescribedGroup(error_code, error_message, group_id, state, group_epoch,
                                     assignment_epoch, assignor, members))
    reader.skip_tags()
    return correlation_id, groups
