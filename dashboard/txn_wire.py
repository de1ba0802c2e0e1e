"""ListTransactions v0, DescribeTransactions v0 and InitProducerId v3 on the wire (KIP-664, KIP-360).

confluent-kafka's AdminClient has no transaction admin calls, so the console sends these
requests itself on the operator listener (``transactions.py`` does the I/O); this module is pure:
bytes in, dataclasses out.  All three versions are flexible (KIP-482): request header v2,
response header v1, compact strings and arrays, tagged fields (skipped).

InitProducerId v3 carries KIP-360's expected producer id and epoch: an operator's abort names
the exact incarnation it saw, so a transaction that ended (or a producer that re-initialised)
in the meantime is answered PRODUCER_FENCED instead of being aborted by mistake.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .consumer_group_describe import _compact_string, _Reader, _uvarint

LIST_TRANSACTIONS, DESCRIBE_TRANSACTIONS, INIT_PRODUCER_ID = 66, 65, 22
CLIENT_ID = "kafkasaas-console"

# Kafka's error codes the console explains
NONE, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS, PRODUCER_FENCED = 0, 16, 51, 90
TRANSACTIONAL_ID_NOT_FOUND = 105


@dataclass(frozen=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    state: str  # Kafka's names: Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, …


@dataclass(frozen=True)
class DescribedTransaction:
    error_code: int
    transactional_id: str
    state: str
    timeout_ms: int
    start_time_ms: int  # -1: no transaction running
    producer_id: int
    producer_epoch: int
    partitions: tuple[tuple[str, int], ...]


def _request(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    """Size prefix, header v2 (client id as a classic nullable string, empty tag buffer), body."""
    client = CLIENT_ID.encode()
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client)) + client + b"\0"
    return struct.pack(">i", len(header) + len(body)) + header + body


def _strings(values: list[str]) -> bytes:
    return _uvarint(len(values) + 1) + b"".join(_compact_string(v) for v in values)


def encode_list_transactions(correlation_id: int, states: list[str] | None = None) -> bytes:
    """All transactions (or those in ``states``); no producer id filter."""
    body = _strings(states or []) + _uvarint(1) + b"\0"
    return _request(LIST_TRANSACTIONS, 0, correlation_id, body)


def encode_describe_transactions(correlation_id: int, transactional_ids: list[str]) -> bytes:
    return _request(DESCRIBE_TRANSACTIONS, 0, correlation_id, _strings(transactional_ids) + b"\0")


def encode_init_producer_id(correlation_id: int, transactional_id: str, timeout_ms: int,
                            producer_id: int, producer_epoch: int) -> bytes:
    body = (_compact_string(transactional_id) + struct.pack(">iqh", timeout_ms, producer_id,
                                                            producer_epoch) + b"\0")
    return _request(INIT_PRODUCER_ID, 3, correlation_id, body)


def _header(payload: bytes) -> tuple[int, _Reader]:
    reader = _Reader(payload)
    correlation_id = reader.int32()
    reader.skip_tags()
    return correlation_id, reader


def _int64(reader: _Reader) -> int:
    return int(struct.unpack(">q", reader.take(8))[0])


def decode_list_transactions(payload: bytes) -> tuple[int, int, list[ListedTransaction]]:
    """(correlation id, error code, transactions)."""
    correlation_id, reader = _header(payload)
    reader.int32()  # throttle time
    error = reader.int16()
    for _ in range(reader.count()):
        reader.string()  # unknown state filters
    listed = []
    for _ in range(reader.count()):
        transactional_id, producer_id, state = reader.string(), _int64(reader), reader.string()
        reader.skip_tags()
        listed.append(ListedTransaction(transactional_id, producer_id, state))
    reader.skip_tags()
    return correlation_id, error, listed


def decode_describe_transactions(payload: bytes) -> tuple[int, list[DescribedTransaction]]:
    correlation_id, reader = _header(payload)
    reader.int32()  # throttle time
    described = []
    for _ in range(reader.count()):
        error, transactional_id, state = reader.int16(), reader.string(), reader.string()
        timeout_ms, start_ms = reader.int32(), _int64(reader)
        producer_id, producer_epoch = _int64(reader), reader.int16()
        partitions = []
        for _ in range(reader.count()):
            topic = reader.string()
            partitions += [(topic, reader.int32()) for _ in range(reader.count())]
            reader.skip_tags()
        reader.skip_tags()
        described.append(DescribedTransaction(error, transactional_id, state, timeout_ms, start_ms,
                                              producer_id, producer_epoch,
                                              tuple(sorted(partitions))))
    reader.skip_tags()
    return correlation_id, described


def decode_init_producer_id(payload: bytes) -> tuple[int, int, int, int]:
    """(correlation id, error code, producer id, producer epoch)."""
    correlation_id, reader = _header(payload)
    reader.int32()  # throttle time
    error = reader.int16()
    return correlation_id, error, _int64(reader), reader.int16()
