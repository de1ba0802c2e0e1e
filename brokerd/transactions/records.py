"""Byte formats of ``__transaction_state`` records (Kafka's ``TransactionLogKey`` and
``TransactionLogValue`` v0 layouts, big-endian)::

    key:   i16 version (0) | string transactional id
    value: i16 version (0) | i64 producer id | i16 producer epoch | i32 timeout ms
           | i8 state | i32 topic count, per topic: string name | i32 count | i32 partition...
           | i64 last update ms | i64 start ms

Strings are i16 length + UTF-8.  A null value (tombstone) removes the id.
"""

from __future__ import annotations

import struct

from brokerd.transactions.state import TxnMetadata, TxnState

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_HEAD = struct.Struct(">hqhib")
_TAIL = struct.Struct(">qq")


def _string(value: str) -> bytes:
    data = value.encode()
    return _I16.pack(len(data)) + data


def _read_string(data: bytes, at: int) -> tuple[str, int]:
    (length,) = _I16.unpack_from(data, at)
    at += _I16.size
    return data[at:at + length].decode(), at + length


def encode_key(transactional_id: str) -> bytes:
    return _I16.pack(0) + _string(transactional_id)


def decode_key(data: bytes) -> str:
    (version,) = _I16.unpack_from(data, 0)
    if version != 0:
        raise ValueError(f"unknown transaction log key version {version}")
    return _read_string(data, _I16.size)[0]


def encode_value(metadata: TxnMetadata) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(metadata.partitions):
        by_topic.setdefault(topic, []).append(partition)
    parts = [_HEAD.pack(0, metadata.producer_id, metadata.producer_epoch, metadata.timeout_ms,
                        int(metadata.state)), _I32.pack(len(by_topic))]
    for topic, partitions in by_topic.items():
        parts.append(_string(topic))
        parts.append(_I32.pack(len(partitions)))
        parts.extend(_I32.pack(partition) for partition in partitions)
    parts.append(_TAIL.pack(metadata.update_ms, metadata.start_ms))
    return b"".join(parts)


def decode_value(transactional_id: str, data: bytes) -> TxnMetadata:
    version, producer_id, epoch, timeout_ms, state = _HEAD.unpack_from(data, 0)
    if version != 0:
        raise ValueError(f"unknown transaction log value version {version}")
    at = _HEAD.size
    (topics,) = _I32.unpack_from(data, at)
    at += _I32.size
    partitions = set()
    for _ in range(topics):
        topic, at = _read_string(data, at)
        (count,) = _I32.unpack_from(data, at)
        at += _I32.size
        for _ in range(count):
            partitions.add((topic, _I32.unpack_from(data, at)[0]))
            at += _I32.size
    update_ms, start_ms = _TAIL.unpack_from(data, at)
    return TxnMetadata(transactional_id, producer_id, epoch, timeout_ms, TxnState(state),
                       frozenset(partitions), start_ms, update_ms)
