"""RecordBatch v2 (magic 2): header parsing, validation, in-place patches, building.

On-wire/on-disk layout of one batch (big-endian; offsets from the batch start)::

    0  base_offset            int64   patched by the leader on append
    8  batch_length           int32   bytes after this field: total size = batch_length + 12
    12 partition_leader_epoch int32   patched by the leader on append
    16 magic                  int8    always 2 here; v0/v1 message sets are refused
    17 crc                    uint32  CRC32C of bytes 21 .. end (attributes through records)
    21 attributes             int16   bits 0-2 codec, 3 timestamp type (1 = LogAppendTime),
                                      4 transactional, 5 control batch
    23 last_offset_delta      int32
    27 base_timestamp         int64
    35 max_timestamp          int64
    43 producer_id            int64
    51 producer_epoch         int16
    53 base_sequence          int32
    57 records_count          int32
    61 records...                     (compressed as a whole when codec != 0)

Because base_offset and partition_leader_epoch sit before the CRC range, the broker assigns
offsets by rewriting 12 header bytes and never touches (or re-checksums) the records.

Each record: varint length, int8 attributes, varlong timestamp_delta, varint offset_delta,
varint key length (-1 = null) + key, varint value length + value, varint header count, then
per header varint key length + UTF-8 key, varint value length (-1 = null) + value.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from crc32c import crc32c

from brokerd.protocol.compression import compress, decompress
from brokerd.protocol.errors import CorruptRecordError, ProtocolError
from brokerd.protocol.primitives import read_varlong, write_varlong

BATCH_HEADER_SIZE = 61
#: batch_length counts everything after itself: header bytes 12..61 plus records.
_MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - 12
_LENGTH_FIELD_END = 12
_CRC_START = 21
_HEADER = struct.Struct(">qiibIhiqqqhii")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_LEADER_EPOCH_AT = 12
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_MAX_TIMESTAMP_AT = 35

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20

_Buffer = bytes | bytearray | memoryview


class BatchHeader:
    """The 61-byte batch header, decoded.  Plain slots: thousands are parsed per fetch."""

    __slots__ = (
        "base_offset",
        "batch_length",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "records_count",
    )

    def __init__(
        self,
        base_offset: int,
        batch_length: int,
        partition_leader_epoch: int,
        magic: int,
        crc: int,
        attributes: int,
        last_offset_delta: int,
        base_timestamp: int,
        max_timestamp: int,
        producer_id: int,
        producer_epoch: int,
        base_sequence: int,
        records_count: int,
    ) -> None:
        self.base_offset = base_offset
        self.batch_length = batch_length
        self.partition_leader_epoch = partition_leader_epoch
        self.magic = magic
        self.crc = crc
        self.attributes = attributes
        self.last_offset_delta = last_offset_delta
        self.base_timestamp = base_timestamp
        self.max_timestamp = max_timestamp
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.records_count = records_count

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return (self.attributes & TIMESTAMP_TYPE_BIT) >> 3

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def size_in_bytes(self) -> int:
        """Whole batch size including base_offset and batch_length."""
        return self.batch_length + _LENGTH_FIELD_END

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"BatchHeader({fields})"


@dataclass(frozen=True, slots=True)
class Record:
    """One record with absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def parse_batch_header(buf: _Buffer, pos: int) -> BatchHeader:
    """Decode the header at ``pos``; raises ProtocolError if fewer than 61 bytes remain."""
    if pos < 0 or pos + BATCH_HEADER_SIZE > len(buf):
        raise ProtocolError(f"truncated batch header at {pos}")
    return BatchHeader(*_HEADER.unpack_from(buf, pos))


def iter_batches(buf: _Buffer) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each complete batch in ``buf``.

    Stops silently at a trailing partial batch: fetch responses and torn log tails end that
    way, and the caller learns where the good data ends from the last yielded batch.  A
    batch_length too small to hold a header is corruption, not truncation, and raises.
    """
    view = memoryview(buf)
    pos = 0
    end = len(view)
    while pos + BATCH_HEADER_SIZE <= end:
        header = BatchHeader(*_HEADER.unpack_from(view, pos))
        if header.batch_length < _MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batch at {pos} has batch_length {header.batch_length}")
        if pos + header.size_in_bytes > end:
            return
        yield pos, header
        pos += header.size_in_bytes


def validate_batch(buf: _Buffer, pos: int, header: BatchHeader) -> None:
    """Check magic, length and CRC32C of the batch at ``pos``; raise CorruptRecordError."""
    if header.magic != 2:
        raise CorruptRecordError(f"unsupported magic {header.magic} (only v2 batches)")
    if header.batch_length < _MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"batch_length {header.batch_length} below the header size")
    end = pos + header.size_in_bytes
    if end > len(buf):
        raise CorruptRecordError(f"batch of {header.size_in_bytes} bytes overruns the buffer")
    if header.records_count < 0 or header.last_offset_delta < 0:
        raise CorruptRecordError("negative records_count or last_offset_delta")
    actual = crc32c(memoryview(buf)[pos + _CRC_START : end])
    if actual != header.crc:
        raise CorruptRecordError(f"CRC mismatch: stored {header.crc:#x}, computed {actual:#x}")


def patch_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Assign the batch's offsets (outside the CRC range, so no re-checksum)."""
    _INT64.pack_into(buf, pos, base_offset)


def patch_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """Stamp the leader epoch (outside the CRC range)."""
    _INT32.pack_into(buf, pos + _LEADER_EPOCH_AT, epoch)


def set_log_append_time(buf: bytearray | memoryview, pos: int, timestamp: int) -> None:
    """Switch the batch to LogAppendTime: max_timestamp = ``timestamp``, attribute bit 3 set.

    Both live inside the CRC range, so the CRC is recomputed.  Record timestamps are left as
    produced; readers of a LogAppendTime batch use max_timestamp for every record.
    """
    (attributes,) = _INT16.unpack_from(buf, pos + _ATTRIBUTES_AT)
    _INT16.pack_into(buf, pos + _ATTRIBUTES_AT, attributes | TIMESTAMP_TYPE_BIT)
    _INT64.pack_into(buf, pos + _MAX_TIMESTAMP_AT, timestamp)
    (batch_length,) = _INT32.unpack_from(buf, pos + 8)
    end = pos + batch_length + _LENGTH_FIELD_END
    _UINT32.pack_into(buf, pos + _CRC_AT, crc32c(memoryview(buf)[pos + _CRC_START : end]))


def decode_records(buf: _Buffer, pos: int, header: BatchHeader) -> list[Record]:
    """Decompress and decode the batch's records (absolute offsets and timestamps)."""
    end = pos + header.size_in_bytes
    if end > len(buf):
        raise CorruptRecordError("batch overruns the buffer")
    payload = memoryview(buf)[pos + BATCH_HEADER_SIZE : end]
    data = memoryview(decompress(header.compression, payload)) if header.compression else payload
    records = []
    at = 0
    try:
        for _ in range(header.records_count):
            record, at = _decode_record(data, at, header)
            records.append(record)
    except CorruptRecordError:
        raise
    except (ProtocolError, UnicodeDecodeError) as exc:
        raise CorruptRecordError(f"malformed record: {exc}") from exc
    return records


def _decode_record(data: memoryview, at: int, header: BatchHeader) -> tuple[Record, int]:
    length, at = read_varlong(data, at)
    record_end = at + length
    if length < 0 or record_end > len(data):
        raise CorruptRecordError("record overruns the batch")
    at += 1  # record attributes: unused in v2
    timestamp_delta, at = read_varlong(data, at)
    offset_delta, at = read_varlong(data, at)
    key, at = _read_varbytes(data, at, record_end)
    value, at = _read_varbytes(data, at, record_end)
    header_count, at = read_varlong(data, at)
    if header_count < 0 or header_count > record_end - at:
        raise CorruptRecordError("bad record header count")
    headers = []
    for _ in range(header_count):
        header_key, at = _read_varbytes(data, at, record_end)
        header_value, at = _read_varbytes(data, at, record_end)
        if header_key is None:
            raise CorruptRecordError("null record header key")
        headers.append((header_key.decode(), header_value))
    if at != record_end:
        raise CorruptRecordError("record length disagrees with its contents")
    if header.timestamp_type == 1:
        timestamp = header.max_timestamp
    else:
        timestamp = header.base_timestamp + timestamp_delta
    return Record(header.base_offset + offset_delta, timestamp, key, value, headers), at


def _read_varbytes(data: memoryview, at: int, limit: int) -> tuple[bytes | None, int]:
    length, at = read_varlong(data, at)
    if length == -1:
        return None, at
    if length < 0 or at + length > limit:
        raise CorruptRecordError("record field overruns the record")
    return bytes(data[at : at + length]), at + length


RecordInput = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]


def build_batch(
    records: Iterable[RecordInput],
    *,
    base_offset: int = 0,
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    timestamp_type: int = 0,
    is_control: bool = False,
    is_transactional: bool = False,
) -> bytes:
    """Build one v2 batch from ``(key, value, headers, timestamp)`` items.

    For internal topics (``__consumer_offsets``, ``__usage``) and tests.  Offsets are
    consecutive from ``base_offset``; base_timestamp is the first record's timestamp.
    """
    items = list(records)
    if not items:
        raise ValueError("a batch needs at least one record")
    base_timestamp = items[0][3]
    body = bytearray()
    for offset_delta, (key, value, headers, timestamp) in enumerate(items):
        record = bytearray(b"\x00")
        write_varlong(record, timestamp - base_timestamp)
        write_varlong(record, offset_delta)
        _write_varbytes(record, key)
        _write_varbytes(record, value)
        write_varlong(record, len(headers))
        for header_key, header_value in headers:
            _write_varbytes(record, header_key.encode())
            _write_varbytes(record, header_value)
        write_varlong(body, len(record))
        body += record
    payload = compress(compression, body) if compression else bytes(body)
    attributes = (
        (compression & COMPRESSION_MASK)
        | (TIMESTAMP_TYPE_BIT if timestamp_type else 0)
        | (TRANSACTIONAL_BIT if is_transactional else 0)
        | (CONTROL_BIT if is_control else 0)
    )
    batch = bytearray(
        _HEADER.pack(
            base_offset,
            _MIN_BATCH_LENGTH + len(payload),
            partition_leader_epoch,
            2,
            0,
            attributes,
            len(items) - 1,
            base_timestamp,
            max(item[3] for item in items),
            producer_id,
            producer_epoch,
            base_sequence,
            len(items),
        )
    )
    batch += payload
    _UINT32.pack_into(batch, _CRC_AT, crc32c(memoryview(batch)[_CRC_START:]))
    return bytes(batch)


def _write_varbytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        write_varlong(out, -1)
        return
    write_varlong(out, len(data))
    out += data
