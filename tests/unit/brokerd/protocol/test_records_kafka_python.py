"""Batches built by kafka-python's own record builder parse, validate and decode here.

kafka-python ships no snappy/lz4/zstd bindings in this environment, so its codec hooks are
pointed at cramjam's primitives; the batch layout, CRC and (for snappy) the xerial framing
are still kafka-python's own code.
"""

from __future__ import annotations

import types

import cramjam
import pytest
from kafka import codec as kafka_codec
from kafka.record import default_records
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from brokerd.protocol.compression import Compression
from brokerd.protocol.records import (
    RecordInput,
    build_batch,
    decode_records,
    parse_batch_header,
    validate_batch,
)

VALUES = [(b"key-%d" % i, b"payload " * (10 + i), [("trace", b"%d" % i)]) for i in range(20)]
BASE_TS = 1_700_000_000_000


def _lz4_compress(payload: bytes, **_: object) -> bytes:
    return bytes(cramjam.lz4.compress(payload))


class _Zstd:
    class ZstdCompressor:
        def compress(self, payload: bytes) -> bytes:
            return bytes(cramjam.zstd.compress(payload))


@pytest.fixture
def kafka_python_codecs(monkeypatch: pytest.MonkeyPatch) -> None:
    snappy = types.SimpleNamespace(
        compress=lambda data: bytes(cramjam.snappy.compress_raw(bytes(data))),
        decompress=lambda data: bytes(cramjam.snappy.decompress_raw(bytes(data))),
    )
    lz4 = types.SimpleNamespace(decompress=lambda data: bytes(cramjam.lz4.decompress(data)))
    monkeypatch.setattr(kafka_codec, "snappy", snappy)
    monkeypatch.setattr(kafka_codec, "lz4", lz4)
    monkeypatch.setattr(kafka_codec, "zstd", _Zstd)
    monkeypatch.setattr(default_records, "lz4_encode", _lz4_compress)
    monkeypatch.setattr(default_records, "lz4_decode", lz4.decompress)


@pytest.mark.usefixtures("kafka_python_codecs")
@pytest.mark.parametrize("codec", list(Compression))
def test_kafka_python_batches_decode(codec: Compression) -> None:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=4000,
        producer_epoch=1,
        base_sequence=17,
        batch_size=1 << 20,
    )
    for offset, (key, value, headers) in enumerate(VALUES):
        builder.append(offset, BASE_TS + offset * 3, key, value, headers)
    batch = bytes(builder.build())
    if codec == Compression.SNAPPY:
        assert batch[61:69] == b"\x82SNAPPY\x00"  # kafka-python writes xerial framing

    header = parse_batch_header(batch, 0)
    assert header.compression == codec
    assert header.records_count == len(VALUES)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (4000, 1, 17)
    validate_batch(batch, 0, header)
    records = decode_records(batch, 0, header)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records] == [
        (i, BASE_TS + i * 3, key, value, headers) for i, (key, value, headers) in enumerate(VALUES)
    ]


@pytest.mark.usefixtures("kafka_python_codecs")
@pytest.mark.parametrize(
    "codec", [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]
)
def test_our_batches_read_by_kafka_python(codec: Compression) -> None:
    items: list[RecordInput] = [(key, value, list(headers), BASE_TS + i)
                                for i, (key, value, headers) in enumerate(VALUES)]
    batch = build_batch(items, base_offset=50, compression=codec)
    theirs = DefaultRecordBatch(bytearray(batch))
    assert theirs.validate_crc()
    assert theirs.compression_type == codec
    decoded = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs]
    assert decoded == [
        (50 + i, BASE_TS + i, key, value, headers)
        for i, (key, value, headers) in enumerate(VALUES)
    ]
