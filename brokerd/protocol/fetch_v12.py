"""Fetch v12 written and read by hand, both ways: the follower's request and answer, the
leader's reading of a request and writing of an answer.

Why not the generic codec (:mod:`brokerd.protocol.codec`): a Fetch is the request the
replicated path serves most (on every ``acks=all`` record each follower sends one and is
answered once, and so is a tailing consumer), and the schema-driven encoder and decoder (a
closure per field, defaults for every absent tagged field) were a fifth of a follower's
CPU per small request (15 µs to decode a one-partition answer, 7 µs to encode the
request) and, on the leader, 17 µs to read a follower's request and 14 µs to write a
one-partition answer in a loop.

The follower's two functions produce and accept exactly the bytes the generic codec does
(``tests/unit/brokerd/protocol/test_fetch_v12.py`` compares them); its decoder returns
only the fields a fetcher reads: of the tagged fields only ``diverging_epoch`` (None when
absent; ``current_leader`` and ``snapshot_id`` are skipped), and ``records`` are zero-copy
views of the frame, as with the generic codec.  The leader's two (:func:`decode_request_body`,
:func:`encode_response`) serve only the usual shape, no tagged field anywhere and the
answer's fields exactly the schema's untagged ones, and return None for anything else, so
:mod:`~brokerd.protocol.codec` falls back to the generic codec, which then decides
(errors included): what they do return is what the generic codec would.

The follower's decoder raises :class:`~brokerd.protocol.ProtocolError` for malformed
input.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.compiler import INLINE_RECORDS_LIMIT, buffer_size
from brokerd.protocol.errors import ProtocolError
from brokerd.protocol.primitives import (
    byte_view,
    read_flexible_response_header,
    read_uvarint,
    skip_tagged_fields,
    write_uvarint,
)

VERSION = 12
_HEADER = struct.Struct(">ihhih")  # size, api key, version, correlation id, client id length
_FETCH_FIELDS = struct.Struct(">iiiibii")  # replica .. session epoch
_PARTITION = struct.Struct(">iiqiqi")
_ANSWER = struct.Struct(">ihqqq")  # partition index, error, HW, LSO, log start
_TOP = struct.Struct(">ihi")  # throttle, error, session id
_INT32 = struct.Struct(">i")
_ABORTED = struct.Struct(">qq")
_EPOCH_END = struct.Struct(">iq")  # diverging_epoch: epoch, end offset (then its tags)
DIVERGING_EPOCH_TAG = 0
# size, correlation id, header tagged fields (none), throttle, error, session id
_ANSWER_START = struct.Struct(">iibihi")
_RESPONSE_KEYS = frozenset({"throttle_time_ms", "error_code", "session_id", "responses"})
_TOPIC_ANSWER_KEYS = frozenset({"topic", "partitions"})
_PARTITION_ANSWER_KEYS = frozenset({
    "partition_index", "error_code", "high_watermark", "last_stable_offset",
    "log_start_offset", "aborted_transactions", "preferred_read_replica", "records"})
_BYTES_LIKE = (bytes, bytearray, memoryview)


def _compact_string(out: bytearray, value: str) -> None:
    encoded = value.encode()
    write_uvarint(out, len(encoded) + 1)
    out += encoded


def encode_request(correlation_id: int, client_id: str,
                   body: Mapping[str, Any]) -> bytearray:
    """A whole Fetch v12 request frame, size prefix included (``cluster_id`` must be
    None: a follower never sends one)."""
    if body.get("cluster_id") is not None:
        raise ValueError("a follower's fetch carries no cluster_id")
    client = client_id.encode()
    out = bytearray(_HEADER.pack(0, ApiKey.FETCH, VERSION, correlation_id, len(client)))
    out += client
    out.append(0)  # header tagged fields
    out += _FETCH_FIELDS.pack(body["replica_id"], body["max_wait_ms"], body["min_bytes"],
                              body["max_bytes"], body["isolation_level"], body["session_id"],
                              body["session_epoch"])
    write_uvarint(out, len(body["topics"]) + 1)
    for topic in body["topics"]:
        _compact_string(out, topic["topic"])
        write_uvarint(out, len(topic["partitions"]) + 1)
        for p in topic["partitions"]:
            out += _PARTITION.pack(p["partition"], p["current_leader_epoch"],
                                   p["fetch_offset"], p["last_fetched_epoch"],
                                   p["log_start_offset"], p["partition_max_bytes"])
            out.append(0)
        out.append(0)
    write_uvarint(out, len(body["forgotten_topics_data"]) + 1)
    for topic in body["forgotten_topics_data"]:
        _compact_string(out, topic["topic"])
        write_uvarint(out, len(topic["partitions"]) + 1)
        for index in topic["partitions"]:
            out += _INT32.pack(index)
        out.append(0)
    _compact_string(out, body["rack_id"])
    out.append(0)  # body tagged fields (no cluster_id)
    _INT32.pack_into(out, 0, len(out) - 4)
    return out


def _room(buf: memoryview, pos: int, size: int) -> int:
    end = pos + size
    if size < 0 or end > len(buf):
        raise ProtocolError("truncated Fetch response")
    return end


def decode_response(frame: bytes | bytearray | memoryview) -> tuple[int, dict[str, Any]]:
    """``(correlation_id, body)`` of a Fetch v12 response frame (after the size prefix)."""
    buf = byte_view(frame)
    try:
        correlation_id, pos = read_flexible_response_header(buf)
        throttle_ms, error, session_id = _TOP.unpack_from(buf, pos)
        pos += _TOP.size
        count, pos = read_uvarint(buf, pos)
        responses = []
        for _ in range(count - 1):
            topic, pos = _read_compact_string(buf, pos)
            partitions_count, pos = read_uvarint(buf, pos)
            partitions = []
            for _ in range(partitions_count - 1):
                index, code, high_watermark, stable, log_start = _ANSWER.unpack_from(buf, pos)
                pos += _ANSWER.size
                aborted_count, pos = read_uvarint(buf, pos)
                aborted = None
                if aborted_count:
                    aborted = []
                    for _ in range(aborted_count - 1):
                        producer_id, first_offset = _ABORTED.unpack_from(buf, pos)
                        pos = skip_tagged_fields(buf, pos + _ABORTED.size)
                        aborted.append({"producer_id": producer_id,
                                        "first_offset": first_offset})
                (preferred,) = _INT32.unpack_from(buf, pos)
                size, pos = read_uvarint(buf, pos + 4)
                records = None
                if size:
                    end = _room(buf, pos, size - 1)
                    records = buf[pos:end]
                    pos = end
                diverging, pos = _read_partition_tags(buf, pos)
                partitions.append({
                    "partition_index": index, "error_code": code,
                    "high_watermark": high_watermark, "last_stable_offset": stable,
                    "log_start_offset": log_start, "aborted_transactions": aborted,
                    "preferred_read_replica": preferred, "records": records,
                    "diverging_epoch": diverging})
            pos = skip_tagged_fields(buf, pos)
            responses.append({"topic": topic, "partitions": partitions})
        skip_tagged_fields(buf, pos)
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"malformed Fetch v{VERSION} response: {exc}") from exc
    return correlation_id, {"throttle_time_ms": throttle_ms, "error_code": error,
                            "session_id": session_id, "responses": responses}


def _read_partition_tags(buf: memoryview, pos: int) -> tuple[dict[str, int] | None, int]:
    """A partition answer's tagged fields: its ``diverging_epoch`` (tag 0) if present,
    and the position past them all."""
    diverging = None
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        end = _room(buf, pos, size)
        if tag == DIVERGING_EPOCH_TAG:
            if size < _EPOCH_END.size:
                raise ProtocolError("truncated diverging_epoch in a Fetch response")
            epoch, end_offset = _EPOCH_END.unpack_from(buf, pos)
            diverging = {"epoch": epoch, "end_offset": end_offset}
        pos = end
    return diverging, pos


def decode_request_body(buf: memoryview, pos: int) -> dict[str, Any] | None:
    """The body of a Fetch v12 request that starts at ``pos`` (after the header), as the
    generic decoder returns it; None when it is not the usual shape (a tagged field
    anywhere, a null array) or does not parse: the generic decoder then reads it."""
    try:
        (replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, session_id,
         session_epoch) = _FETCH_FIELDS.unpack_from(buf, pos)
        count, pos = _read_count(buf, pos + _FETCH_FIELDS.size)
        topics = []
        for _ in range(count):
            topic, pos = _read_compact_string(buf, pos)
            partitions_count, pos = _read_count(buf, pos)
            partitions = []
            for _ in range(partitions_count):
                (partition, current_leader_epoch, fetch_offset, last_fetched_epoch,
                 log_start_offset, partition_max_bytes) = _PARTITION.unpack_from(buf, pos)
                pos = _untagged(buf, pos + _PARTITION.size)
                partitions.append({
                    "partition": partition, "current_leader_epoch": current_leader_epoch,
                    "fetch_offset": fetch_offset, "last_fetched_epoch": last_fetched_epoch,
                    "log_start_offset": log_start_offset,
                    "partition_max_bytes": partition_max_bytes})
            pos = _untagged(buf, pos)
            topics.append({"topic": topic, "partitions": partitions})
        count, pos = _read_count(buf, pos)
        forgotten = []
        for _ in range(count):
            topic, pos = _read_compact_string(buf, pos)
            indexes_count, pos = _read_count(buf, pos)
            end = pos + 4 * indexes_count
            if end > len(buf):
                return None
            indexes = [index for (index,) in _INT32.iter_unpack(buf[pos:end])]
            pos = _untagged(buf, end)
            forgotten.append({"topic": topic, "partitions": indexes})
        rack_id, pos = _read_compact_string(buf, pos)
        _untagged(buf, pos)  # a cluster_id or a newer client's tagged field: generic
    except (struct.error, IndexError, ValueError):
        return None
    return {"cluster_id": None, "replica_id": replica_id, "max_wait_ms": max_wait_ms,
            "min_bytes": min_bytes, "max_bytes": max_bytes,
            "isolation_level": isolation_level, "session_id": session_id,
            "session_epoch": session_epoch, "topics": topics,
            "forgotten_topics_data": forgotten, "rack_id": rack_id}


def _read_count(buf: memoryview, pos: int) -> tuple[int, int]:
    """A non-null compact array's length; ValueError for a null one."""
    count, pos = read_uvarint(buf, pos)
    if count == 0:
        raise ValueError("a null array")
    return count - 1, pos


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


def encode_response(correlation_id: int, body: Mapping[str, Any]) -> list[Any] | None:
    """A Fetch v12 answer as the generic encoder writes it: buffers, size prefix included,
    records of ``INLINE_RECORDS_LIMIT`` bytes or more (and file regions) as parts of their
    own; None when ``body`` is not the usual shape (a partition with a tagged field set, or
    any key beyond the schema's untagged ones), for the generic encoder to write."""
    if body.keys() != _RESPONSE_KEYS:
        return None
    parts: list[Any] = []
    out = bytearray(_ANSWER_START.pack(0, correlation_id, 0, body["throttle_time_ms"],
                                       body["error_code"], body["session_id"]))
    write_uvarint(out, len(body["responses"]) + 1)
    for topic in body["responses"]:
        if topic.keys() != _TOPIC_ANSWER_KEYS:
            return None
        _compact_string(out, topic["topic"])
        write_uvarint(out, len(topic["partitions"]) + 1)
        for answer in topic["partitions"]:
            if answer.keys() != _PARTITION_ANSWER_KEYS:
                return None
            out += _ANSWER.pack(answer["partition_index"], answer["error_code"],
                                answer["high_watermark"], answer["last_stable_offset"],
                                answer["log_start_offset"])
            aborted = answer["aborted_transactions"]
            if aborted is None:
                out.append(0)
            else:
                write_uvarint(out, len(aborted) + 1)
                for txn in aborted:
                    out += _ABORTED.pack(txn["producer_id"], txn["first_offset"])
                    out.append(0)
            out += _INT32.pack(answer["preferred_read_replica"])
            records = answer["records"]
            if records is None:
                out.append(0)
            else:
                size = buffer_size(records)
                write_uvarint(out, size + 1)
                if size >= INLINE_RECORDS_LIMIT or not isinstance(records, _BYTES_LIKE):
                    parts += (out, records)
                    out = bytearray()
                else:
                    out += records
            out.append(0)  # partition tagged fields
        out.append(0)  # topic tagged fields
    out.append(0)  # body tagged fields
    parts.append(out)
    _INT32.pack_into(parts[0], 0, sum(buffer_size(part) for part in parts) - 4)
    return parts
