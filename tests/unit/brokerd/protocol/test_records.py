"""RecordBatch v2: build/parse/validate/patch, corruption detection, kafka-python parity."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokerd.protocol import CorruptRecordError, ProtocolError
from brokerd.protocol.compression import Compression
from brokerd.protocol.records import (
    BATCH_HEADER_SIZE,
    build_batch,
    decode_records,
    iter_batches,
    parse_batch_header,
    patch_base_offset,
    patch_partition_leader_epoch,
    set_log_append_time,
    validate_batch,
)

ITEMS = [
    (b"k1", b"value-1" * 20, [("h", b"1"), ("n", None)], 1_700_000_000_000),
    (None, b"value-2" * 20, [], 1_700_000_000_005),
    (b"k3", None, [], 1_699_999_999_990),
]


@pytest.mark.parametrize("codec", list(Compression))
def test_build_parse_validate_decode(codec: Compression) -> None:
    batch = build_batch(
        ITEMS,
        base_offset=100,
        compression=codec,
        producer_id=7,
        producer_epoch=2,
        base_sequence=40,
        partition_leader_epoch=3,
    )
    header = parse_batch_header(batch, 0)
    assert header.size_in_bytes == len(batch)
    assert (header.base_offset, header.last_offset, header.records_count) == (100, 102, 3)
    assert header.compression == codec
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 40)
    assert header.partition_leader_epoch == 3
    assert header.base_timestamp == 1_700_000_000_000
    assert header.max_timestamp == 1_700_000_000_005
    assert header.timestamp_type == 0
    assert not header.is_transactional and not header.is_control
    validate_batch(batch, 0, header)
    records = decode_records(batch, 0, header)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records] == [
        (100 + i, ts, key, value, headers) for i, (key, value, headers, ts) in enumerate(ITEMS)
    ]


def test_attribute_flags() -> None:
    batch = build_batch(ITEMS[:1], is_control=True, is_transactional=True, timestamp_type=1)
    header = parse_batch_header(batch, 0)
    assert header.is_control and header.is_transactional and header.timestamp_type == 1
    validate_batch(batch, 0, header)


def test_patches_outside_crc_keep_batch_valid() -> None:
    log = bytearray(build_batch(ITEMS) + build_batch(ITEMS[:1]))
    positions = [pos for pos, _ in iter_batches(log)]
    assert positions[0] == 0 and len(positions) == 2
    for new_base, pos in zip((5000, 5003), positions, strict=True):
        patch_base_offset(log, pos, new_base)
        patch_partition_leader_epoch(log, pos, 9)
    batches = list(iter_batches(log))
    assert [h.base_offset for _, h in batches] == [5000, 5003]
    assert [h.partition_leader_epoch for _, h in batches] == [9, 9]
    for pos, header in batches:
        validate_batch(log, pos, header)
    assert [r.offset for r in decode_records(log, positions[1], batches[1][1])] == [5003]


def test_set_log_append_time_rewrites_crc() -> None:
    batch = bytearray(build_batch(ITEMS, compression=Compression.LZ4))
    set_log_append_time(batch, 0, 1_800_000_000_000)
    header = parse_batch_header(batch, 0)
    assert header.timestamp_type == 1 and header.max_timestamp == 1_800_000_000_000
    assert header.compression == Compression.LZ4  # other attribute bits survive
    validate_batch(batch, 0, header)
    assert {r.timestamp for r in decode_records(batch, 0, header)} == {1_800_000_000_000}


@pytest.mark.parametrize("flip_at", [21, 30, BATCH_HEADER_SIZE + 3, -1])
def test_crc_detects_a_flipped_bit(flip_at: int) -> None:
    batch = bytearray(build_batch(ITEMS))
    batch[flip_at] ^= 0x01
    with pytest.raises(CorruptRecordError, match="CRC"):
        validate_batch(batch, 0, parse_batch_header(batch, 0))


def test_validate_rejects_old_magic_and_short_length() -> None:
    batch = bytearray(build_batch(ITEMS))
    batch[16] = 1
    with pytest.raises(CorruptRecordError, match="magic"):
        validate_batch(batch, 0, parse_batch_header(batch, 0))
    truncated = build_batch(ITEMS)[:-1]
    with pytest.raises(CorruptRecordError, match="overruns"):
        validate_batch(truncated, 0, parse_batch_header(truncated, 0))


def test_iter_batches_stops_at_torn_tail_and_rejects_bad_length() -> None:
    one = build_batch(ITEMS)
    assert [pos for pos, _ in iter_batches(one + one[:-5])] == [0]
    assert list(iter_batches(one[:30])) == []
    bad = bytearray(one)
    bad[8:12] = (10).to_bytes(4, "big")
    with pytest.raises(CorruptRecordError):
        list(iter_batches(bad))


def test_parse_header_bounds() -> None:
    with pytest.raises(ProtocolError):
        parse_batch_header(b"\x00" * 60, 0)


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(min_size=BATCH_HEADER_SIZE, max_size=300),
    codec=st.sampled_from(list(Compression)),
)
def test_decode_records_on_garbage_raises_only_corrupt(data: bytes, codec: int) -> None:
    header = parse_batch_header(data, 0)
    header.attributes = codec
    header.batch_length = len(data) - 12
    try:
        decode_records(data, 0, header)
    except CorruptRecordError:
        pass
