import pytest

from brokerd.protocol import ErrorCode
from brokerd.protocol.records import build_batch
from brokerd.storage import (
    CorruptRecordError,
    InvalidRecordError,
    LogConfig,
    RecordTooLargeError,
)
from brokerd.storage.validation import segment_sized_runs, validate_record_set

from .conftest import NOW_MS, batch


def validate(data: bytes | memoryview, **config: object) -> list[int]:
    batches = validate_record_set(
        memoryview(data), LogConfig(**config), NOW_MS, from_client=True  # type: ignore[arg-type]
    )
    return [position for position, _ in batches]


def test_positions_of_every_batch_in_a_record_set() -> None:
    first, second = bytes(batch(3)), bytes(batch(1))
    assert validate(first + second) == [0, len(first)]


@pytest.mark.parametrize(
    "mangle",
    [
        lambda b: b[:-1],  # torn
        lambda b: b + b"\x00" * 10,  # trailing garbage
        lambda b: b[:16] + bytes([1]) + b[17:],  # magic 1
        lambda b: b[:-1] + bytes([b[-1] ^ 1]),  # CRC mismatch
        lambda b: b[:8] + (10).to_bytes(4, "big") + b[12:],  # length below the header
    ],
)
def test_corruption_is_rejected(mangle) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CorruptRecordError) as info:
        validate(mangle(bytes(batch(2))))
    assert info.value.error_code == ErrorCode.CORRUPT_MESSAGE


def test_size_limits() -> None:
    data = bytes(batch(1, value_size=500))
    with pytest.raises(RecordTooLargeError) as info:
        validate(data, max_message_bytes=len(data) - 1)
    assert info.value.error_code == ErrorCode.MESSAGE_TOO_LARGE
    with pytest.raises(RecordTooLargeError) as info:
        validate(data + data, segment_bytes=len(data) + 1)
    assert info.value.error_code == ErrorCode.RECORD_LIST_TOO_LARGE
    assert validate(data, max_message_bytes=len(data)) == [0]


def test_a_followers_record_set_is_not_held_to_the_size_limits() -> None:
    data = bytes(batch(1, value_size=500))
    small = LogConfig(segment_bytes=len(data), max_message_bytes=len(data) - 1)
    batches = validate_record_set(memoryview(data + data), small, NOW_MS, from_client=False)
    assert [position for position, _ in batches] == [0, len(data)]


def test_segment_sized_runs_keep_batches_in_order_and_within_the_limit() -> None:
    small, large = bytes(batch(1, value_size=100)), bytes(batch(1, value_size=900))
    data = small + small + large + small
    batches = validate_record_set(memoryview(data), LogConfig(), NOW_MS, from_client=False)
    runs = segment_sized_runs(batches, segment_bytes=2 * len(small))
    assert [(start, end, len(headers)) for start, end, headers in runs] == [
        (0, 2 * len(small), 2),
        (2 * len(small), 2 * len(small) + len(large), 1),  # too long for any run: alone
        (len(data) - len(small), len(data), 1),
    ]
    assert len(segment_sized_runs(batches, segment_bytes=len(data))) == 1


def test_client_may_not_send_control_or_empty_batches() -> None:
    control = build_batch([(b"k", b"v", [], NOW_MS)], is_control=True)
    with pytest.raises(InvalidRecordError):
        validate(control)
    with pytest.raises(InvalidRecordError):
        validate(b"")
