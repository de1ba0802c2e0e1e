"""Record-batch compression codecs (the low 3 bits of a batch's attributes).

The broker stores batches as produced and only looks inside them for compaction and a few
validations, so this module only has to be correct and tolerant, not fast:

- GZIP (1): a gzip member stream.
- SNAPPY (2): two framings exist in the wild.  librdkafka writes one raw snappy block; the
  Java client (via snappy-java) and kafka-python write the "xerial" framing: a 16-byte header
  (``\\x82SNAPPY\\x00``, int32 version, int32 min-compatible version) followed by blocks of
  int32 length + raw snappy.  Both are decoded; compression writes raw, which every client
  reads.
- LZ4 (3): the standard LZ4 frame format (Kafka's v2 batches fixed the old header-checksum
  bug, so no special casing).
- ZSTD (4): zstd frames; producers stream-compress, so the frame often has no content size,
  which cramjam's streaming decoder handles.
"""

from __future__ import annotations

import struct
from enum import IntEnum

import cramjam

from brokerd.protocol.errors import CorruptRecordError

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16
_BLOCK_LENGTH = struct.Struct(">i")


class Compression(IntEnum):
    """Codec ids as stored in the batch attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def compress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    """Compress ``data`` for a batch whose attributes name ``codec``."""
    if codec == Compression.NONE:
        return bytes(data)
    if codec == Compression.GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == Compression.SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == Compression.LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise CorruptRecordError(f"unknown compression codec {codec}")


def decompress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    """Inverse of :func:`compress`, accepting every framing real producers emit."""
    try:
        if codec == Compression.NONE:
            return bytes(data)
        if codec == Compression.GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == Compression.SNAPPY:
            return _snappy_decompress(memoryview(data))
        if codec == Compression.LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == Compression.ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except cramjam.DecompressionError as exc:
        raise CorruptRecordError(f"cannot decompress codec {codec}: {exc}") from exc
    raise CorruptRecordError(f"unknown compression codec {codec}")


def _snappy_decompress(data: memoryview) -> bytes:
    if data[: len(_XERIAL_MAGIC)] != _XERIAL_MAGIC:
        return bytes(cramjam.snappy.decompress_raw(data))
    out = bytearray()
    pos = _XERIAL_HEADER_SIZE
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptRecordError("truncated xerial snappy block length")
        (length,) = _BLOCK_LENGTH.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > len(data):
            raise CorruptRecordError("xerial snappy block overruns the data")
        out += cramjam.snappy.decompress_raw(data[pos : pos + length])
        pos += length
    return bytes(out)
