"""Fuzz: hostile frames only ever raise ProtocolError, quickly and without big allocations."""

from __future__ import annotations

import struct
import tracemalloc

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerd.protocol import (
    ProtocolError,
    UnsupportedVersionError,
    decode_request,
    decode_response,
    encode_request,
)
from brokerd.protocol.messages import ALL_MESSAGES

from .strategies import struct_strategy

CASES = [
    (message, version)
    for message in ALL_MESSAGES
    for version in range(message.min_version, message.max_version + 1)
]
FUZZ = settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))


def _decode_or_protocol_error(frame: bytes) -> None:
    try:
        decode_request(frame)
    except ProtocolError:
        pass


@FUZZ
@given(frame=st.binary(max_size=300))
def test_random_frames(frame: bytes) -> None:
    _decode_or_protocol_error(frame)


@FUZZ
@given(case=st.sampled_from(CASES), tail=st.binary(max_size=300))
def test_valid_header_random_body(case, tail: bytes) -> None:
    message, version = case
    header = struct.pack(">hhih", message.api_key, version, 1, 0)
    if message.is_flexible(version):
        header += b"\x00"
    _decode_or_protocol_error(header + tail)
    try:
        decode_response(message.api_key, version, struct.pack(">i", 1) + tail)
    except ProtocolError:
        pass


@st.composite
def mutated_frames(draw: st.DrawFn) -> bytes:
    message, version = draw(st.sampled_from(CASES))
    body = draw(struct_strategy(message.request, version))
    frame = bytearray(encode_request(message.api_key, version, 3, "fuzz", body)[4:])
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["flip", "truncate", "insert", "big-length"]))
        at = draw(st.integers(0, max(len(frame) - 1, 0)))
        if action == "flip" and frame:
            frame[at] ^= draw(st.integers(1, 255))
        elif action == "truncate":
            del frame[at:]
        elif action == "insert":
            frame[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:
            frame[at : at + 4] = b"\x7f\xff\xff\xf0"
    return bytes(frame)


@FUZZ
@given(frame=mutated_frames())
def test_mutated_valid_frames(frame: bytes) -> None:
    _decode_or_protocol_error(frame)


def test_huge_declared_lengths_are_errors_not_allocations() -> None:
    produce_v3 = struct.pack(">hhih", 0, 3, 1, -1)
    lying = [
        # transactional_id length 32767 with 3 bytes behind it
        produce_v3 + struct.pack(">h", 32767) + b"abc",
        # topics array count 2**31-1
        produce_v3 + struct.pack(">hhii", -1, 1, 100, 0x7FFFFFFF),
        # records length 2**31-1
        produce_v3
        + struct.pack(">hhiih1siii", -1, 1, 100, 1, 1, b"t", 1, 0, 0x7FFFFFFF),
    ]
    tracemalloc.start()
    try:
        for frame in lying:
            try:
                decode_request(frame)
            except ProtocolError as exc:
                assert "overruns" in str(exc)
            else:
                raise AssertionError("a lying length decoded")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_unsupported_version_carries_header_fields() -> None:
    frame = struct.pack(">hhih", 18, 99, 4242, 2) + b"me" + b"\x00\x00"
    try:
        decode_request(frame)
    except UnsupportedVersionError as exc:
        assert (exc.api_key, exc.api_version, exc.correlation_id) == (18, 99, 4242)
        assert exc.client_id == "me"
    else:
        raise AssertionError("ApiVersions v99 decoded")


def test_unknown_api_key_is_unsupported() -> None:
    frame = struct.pack(">hhih", 1000, 0, 7, -1)
    try:
        decode_request(frame)
    except UnsupportedVersionError as exc:
        assert (exc.api_key, exc.correlation_id) == (1000, 7)
    else:
        raise AssertionError("unknown api key decoded")


def test_short_frame() -> None:
    try:
        decode_request(b"\x00\x03\x00")
    except ProtocolError as exc:
        assert not isinstance(exc, UnsupportedVersionError)
    else:
        raise AssertionError("3-byte frame decoded")
