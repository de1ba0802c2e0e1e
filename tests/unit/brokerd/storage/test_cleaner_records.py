"""Rewriting one batch for compaction: offsets, producer fields, codec, tombstone horizon."""

from collections.abc import Callable

import pytest
from aiokafka.record.memory_records import MemoryRecords as AiokafkaRecords
from kafka.record.memory_records import MemoryRecords as KafkaPythonRecords

from brokerd.protocol import ErrorCode
from brokerd.protocol.records import (
    Record,
    RecordInput,
    build_batch,
    decode_records,
    parse_batch_header,
    validate_batch,
)
from brokerd.storage import InvalidRecordError, Log, LogConfig
from brokerd.storage.cleaner_records import (
    DELETE_HORIZON_BIT,
    FilteredBatch,
    delete_horizon,
    filter_batch,
)

from .conftest import NOW_MS, batch

CODECS = [0, 1, 2, 3, 4]  # none, gzip, snappy, lz4, zstd
RETENTION = 1000


def make_batch(items: list[RecordInput], compression: int = 0) -> bytes:
    return build_batch(
        items,
        base_offset=100,
        compression=compression,
        producer_id=7,
        producer_epoch=2,
        base_sequence=40,
        partition_leader_epoch=5,
    )


def values(i: int) -> RecordInput:
    return (b"k%d" % i, b"v%d" % i, [("h", b"x")], NOW_MS + i)


def run(
    data: bytes, keep: Callable[[Record], bool], retain_empty: bool = False, now: int = NOW_MS
) -> FilteredBatch:
    header = parse_batch_header(data, 0)
    return filter_batch(data, header, keep, retain_empty, now, RETENTION)


@pytest.mark.parametrize("codec", CODECS)
def test_dropping_records_keeps_offsets_producer_fields_and_codec(codec: int) -> None:
    original = make_batch([values(i) for i in range(6)], codec)
    before = parse_batch_header(original, 0)
    result = run(original, lambda r: r.offset in (101, 104))
    assert result.data is not None and result.tombstone_horizon is None
    header = parse_batch_header(result.data, 0)
    validate_batch(result.data, 0, header)
    assert header.compression == codec
    assert (header.base_offset, header.last_offset, header.records_count) == (100, 105, 2)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 40)
    assert header.partition_leader_epoch == 5
    assert header.max_timestamp == NOW_MS + 4 < before.max_timestamp
    records = decode_records(result.data, 0, header)
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in records] == [
        (101, b"k1", b"v1", NOW_MS + 1, [("h", b"x")]),
        (104, b"k4", b"v4", NOW_MS + 4, [("h", b"x")]),
    ]


def test_unchanged_batch_is_returned_as_is() -> None:
    original = make_batch([values(i) for i in range(3)])
    assert run(original, lambda r: True).data is original


@pytest.mark.parametrize("codec", [0, 4])
def test_surviving_tombstone_gets_a_delete_horizon_and_timestamps_stay(codec: int) -> None:
    original = make_batch([values(0), (b"gone", None, [], NOW_MS + 1), values(2)], codec)
    result = run(original, lambda r: True)
    assert result.tombstone_horizon == NOW_MS + RETENTION
    assert result.data is not None
    header = parse_batch_header(result.data, 0)
    validate_batch(result.data, 0, header)
    assert header.attributes & DELETE_HORIZON_BIT and delete_horizon(header) == NOW_MS + RETENTION
    assert [(r.offset, r.timestamp, r.value) for r in decode_records(result.data, 0, header)] == [
        (100, NOW_MS, b"v0"),
        (101, NOW_MS + 1, None),
        (102, NOW_MS + 2, b"v2"),
    ]
    # Before the horizon the tombstone stays (and the batch is not rewritten again) ...
    again = run(result.data, lambda r: True, now=NOW_MS + RETENTION - 1)
    assert again.data is result.data and again.tombstone_horizon == NOW_MS + RETENTION
    # ... at the horizon it goes; other records keep their offsets and timestamps.
    expired = run(result.data, lambda r: True, now=NOW_MS + RETENTION)
    assert expired.data is not None and expired.tombstone_horizon is None
    header = parse_batch_header(expired.data, 0)
    kept = [(r.offset, r.timestamp) for r in decode_records(expired.data, 0, header)]
    assert kept == [(100, NOW_MS), (102, NOW_MS + 2)]


def test_emptied_batch_is_dropped_or_kept_as_a_bare_header() -> None:
    original = make_batch([values(i) for i in range(4)], compression=1)
    assert run(original, lambda r: False).data is None
    empty = run(original, lambda r: False, retain_empty=True).data
    assert empty is not None and len(empty) == 61
    header = parse_batch_header(empty, 0)
    validate_batch(empty, 0, header)
    assert (header.base_offset, header.last_offset, header.records_count) == (100, 103, 0)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 40)
    assert header.compression == 0 and decode_records(empty, 0, header) == []
    # A later cleaning drops it once nothing needs it any more, or keeps it unchanged.
    assert run(empty, lambda r: True).data is None
    assert run(empty, lambda r: True, retain_empty=True).data == empty


def test_log_append_time_batch_keeps_its_broker_timestamp() -> None:
    original = build_batch([values(i) for i in range(3)], base_offset=5, timestamp_type=1)
    result = run(original, lambda r: r.offset == 6)
    assert result.data is not None
    header = parse_batch_header(result.data, 0)
    assert header.timestamp_type == 1 and header.max_timestamp == NOW_MS + 2


def test_keyless_records_are_refused_by_compacted_topics(open_log: Callable[..., Log]) -> None:
    data = build_batch([values(0), (None, b"v", [], NOW_MS)])
    log = open_log(cleanup_policy=("compact",))
    with pytest.raises(InvalidRecordError) as raised:
        log.append_as_leader(memoryview(data), 0)
    assert raised.value.error_code == ErrorCode.INVALID_RECORD
    assert [index for index, _ in raised.value.record_errors] == [1]
    assert log.log_end_offset == 0
    assert log.append_as_leader(batch(2), 0).last_offset == 1  # keyed records are accepted


def test_min_cleanable_dirty_ratio_is_parsed_and_checked() -> None:
    config = LogConfig.from_props({"min.cleanable.dirty.ratio": "0.25"})
    assert config.min_cleanable_dirty_ratio == 0.25
    with pytest.raises(ValueError):
        LogConfig.from_props({"min.cleanable.dirty.ratio": "1.5"})
    assert LogConfig(cleanup_policy=("compact", "delete")).compacts


@pytest.mark.parametrize("client_records", [KafkaPythonRecords, AiokafkaRecords])
@pytest.mark.parametrize("codec", [0, 1])  # codecs both clients handle without extras
def test_clients_read_rewritten_and_empty_batches(codec: int, client_records: type) -> None:
    tombstone: RecordInput = (b"gone", None, [], NOW_MS + 1)
    original = make_batch([values(0), tombstone, values(2), values(3)], codec)
    rewritten = run(original, lambda r: r.offset != 102).data
    empty = run(original, lambda r: False, retain_empty=True).data
    assert rewritten is not None and empty is not None
    client_view = client_records(rewritten + empty)
    batches = []
    while (client_batch := client_view.next_batch()) is not None:
        assert client_batch.validate_crc()
        records = [(r.offset, r.timestamp, r.key, r.value) for r in client_batch]
        batches.append((client_batch.next_offset, records))
    assert batches == [
        (104, [(100, NOW_MS, b"k0", b"v0"), (101, NOW_MS + 1, b"gone", None),
               (103, NOW_MS + 3, b"k3", b"v3")]),
        (104, []),  # a consumer skips the empty batch to the same next offset
    ]
