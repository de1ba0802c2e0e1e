"""Byte vectors built field by field from Kafka's documented layouts (see records.py)."""

import struct

import pytest

from brokerd.groups.records import (
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_key,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
)
from brokerd.protocol import CorruptRecordError


def s16(text: str | None) -> bytes:
    """STRING: int16 length (-1 for null) + UTF-8."""
    if text is None:
        return struct.pack(">h", -1)
    return struct.pack(">h", len(text.encode())) + text.encode()


def b32(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def test_offset_commit_key_v1() -> None:
    expected = struct.pack(">h", 1) + s16("grp") + s16("orders") + struct.pack(">i", 7)
    assert encode_offset_key(OffsetKey("grp", "orders", 7)) == expected
    assert decode_key(expected) == OffsetKey("grp", "orders", 7)


def test_offset_commit_key_v0_has_the_same_layout() -> None:
    data = struct.pack(">h", 0) + s16("g") + s16("t") + struct.pack(">i", 0)
    assert decode_key(data) == OffsetKey("g", "t", 0)


def test_group_metadata_key_v2() -> None:
    expected = struct.pack(">h", 2) + s16("grp")
    assert encode_group_key(GroupKey("grp")) == expected
    assert decode_key(expected) == GroupKey("grp")


def test_unknown_key_versions_are_not_ours() -> None:
    # Versions 3+ are KIP-848 consumer-group records.
    assert decode_key(struct.pack(">h", 3) + s16("grp")) is None


def test_offset_commit_value_v3() -> None:
    expected = (struct.pack(">hqi", 3, 1234, 5) + s16("meta")
                + struct.pack(">q", 1_700_000_000_000))
    value = OffsetValue(1234, 5, "meta", 1_700_000_000_000)
    assert encode_offset_value(value) == expected
    assert decode_offset_value(expected) == value


def test_offset_commit_value_v1_keeps_an_explicit_expire_timestamp() -> None:
    expected = struct.pack(">hq", 1, 42) + s16("") + struct.pack(">qq", 1000, 5000)
    value = OffsetValue(42, -1, "", 1000, 5000)
    assert encode_offset_value(value) == expected
    assert decode_offset_value(expected) == value


def test_offset_commit_value_v0_and_v2_decode() -> None:
    v0 = struct.pack(">hq", 0, 9) + s16("m") + struct.pack(">q", 77)
    v2 = struct.pack(">hq", 2, 9) + s16("m") + struct.pack(">q", 77)
    assert decode_offset_value(v0) == OffsetValue(9, -1, "m", 77)
    assert decode_offset_value(v2) == OffsetValue(9, -1, "m", 77)


def test_offset_commit_value_v4_flexible_decodes() -> None:
    # Compact string: uvarint(len + 1); then an empty tagged-field section (0).
    data = struct.pack(">hqi", 4, 10, 2) + bytes([3]) + b"ab" + struct.pack(">q", 99) + b"\x00"
    assert decode_offset_value(data) == OffsetValue(10, 2, "ab", 99)


def test_group_metadata_value_v3() -> None:
    member = (s16("m-1") + s16("inst") + s16("client") + s16("/1.2.3.4")
              + struct.pack(">ii", 300_000, 10_000) + b32(b"sub") + b32(b"asg"))
    expected = (struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 4) + s16("range")
                + s16("m-1") + struct.pack(">q", 123) + struct.pack(">i", 1) + member)
    value = GroupValue("consumer", 4, "range", "m-1", 123, (
        MemberValue("m-1", "inst", "client", "/1.2.3.4", 300_000, 10_000, b"sub", b"asg"),))
    assert encode_group_value(value) == expected
    assert decode_group_value(expected) == value


def test_empty_group_metadata_value_has_null_protocol_and_leader() -> None:
    expected = (struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 2) + s16(None)
                + s16(None) + struct.pack(">qi", 55, 0))
    value = GroupValue("consumer", 2, None, None, 55, ())
    assert encode_group_value(value) == expected
    assert decode_group_value(expected) == value


def test_group_metadata_value_v0_decodes_with_defaults() -> None:
    # v0: no current_state_timestamp, no group_instance_id, no rebalance_timeout.
    member = s16("m") + s16("c") + s16("h") + struct.pack(">i", 6000) + b32(b"s") + b32(b"a")
    data = (struct.pack(">h", 0) + s16("consumer") + struct.pack(">i", 1) + s16("range")
            + s16("m") + struct.pack(">i", 1) + member)
    decoded = decode_group_value(data)
    assert decoded.current_state_timestamp == -1
    assert decoded.members == (MemberValue("m", None, "c", "h", -1, 6000, b"s", b"a"),)


@pytest.mark.parametrize("data", [
    b"\x00",  # shorter than the version
    struct.pack(">hq", 3, 1),  # truncated
    struct.pack(">hq", 9, 1) + s16("") + struct.pack(">q", 0),  # unknown version
    struct.pack(">hqi", 3, 1, 0) + s16("") + struct.pack(">q", 0) + b"x",  # trailing byte
])
def test_malformed_offset_values_are_rejected(data: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_offset_value(data)
