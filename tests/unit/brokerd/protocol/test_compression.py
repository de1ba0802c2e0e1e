"""Every codec round-trips, and the framings real producers emit decode."""

from __future__ import annotations

import struct

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokerd.protocol import CorruptRecordError, ProtocolError
from brokerd.protocol.compression import Compression, compress, decompress

PAYLOAD = b"".join(b"record-%05d:" % i + b"v" * (i % 17) for i in range(2000))


@pytest.mark.parametrize("codec", list(Compression))
def test_round_trip(codec: Compression) -> None:
    compressed = compress(codec, PAYLOAD)
    if codec != Compression.NONE:
        assert len(compressed) < len(PAYLOAD) // 2
    assert decompress(codec, compressed) == PAYLOAD


@settings(max_examples=50, deadline=None)
@given(codec=st.sampled_from(list(Compression)), data=st.binary(max_size=3000))
def test_round_trip_random(codec: Compression, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data


def test_xerial_snappy_frames_decode() -> None:
    # The framing snappy-java and kafka-python write: magic, version 1, compat 1, then
    # (int32 length, raw snappy block) pairs of at most 32 KiB of input each.
    framed = bytearray(b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1))
    for start in range(0, len(PAYLOAD), 32 * 1024):
        block = bytes(cramjam.snappy.compress_raw(PAYLOAD[start : start + 32 * 1024]))
        framed += struct.pack(">i", len(block)) + block
    assert len(PAYLOAD) > 32 * 1024  # several blocks
    assert decompress(Compression.SNAPPY, bytes(framed)) == PAYLOAD


def test_truncated_xerial_block_is_corrupt() -> None:
    framed = b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, 1000) + b"abc"
    with pytest.raises(CorruptRecordError):
        decompress(Compression.SNAPPY, framed)


def test_zstd_frame_without_content_size() -> None:
    streaming = cramjam.zstd.Compressor()
    streaming.compress(PAYLOAD)
    frame = bytes(streaming.finish())
    assert frame[4] & 0xE0 == 0  # no content-size field, not single-segment
    assert decompress(Compression.ZSTD, frame) == PAYLOAD


@pytest.mark.parametrize("codec", [c for c in Compression if c != Compression.NONE])
def test_garbage_is_a_protocol_error(codec: Compression) -> None:
    with pytest.raises(ProtocolError):
        decompress(codec, b"\x00not compressed at all" * 3)


def test_unknown_codec() -> None:
    with pytest.raises(CorruptRecordError):
        decompress(7, b"x")
