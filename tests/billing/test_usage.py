"""Usage facts from raw records: first occurrence wins, the lookback was billed last month,
storage hours are whole and take the largest sample; unreadable records stop the job."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark.usage import month_bounds, usage_facts
from tests.billing.usage_records import raw_frame, storage, traffic, usage_record

GIB = 2**30


def facts(frame: DataFrame) -> list[tuple]:
    return [tuple(row) for row in usage_facts(frame).orderBy("tenant", "day").collect()]


def test_month_bounds_are_utc_and_roll_over_the_year() -> None:
    start, end = month_bounds("2026-12")
    assert (start.isoformat(), end.isoformat()) == (
        "2026-12-01T00:00:00+00:00", "2027-01-01T00:00:00+00:00")


def test_duplicates_count_once_and_lookback_keys_are_excluded(spark: SparkSession) -> None:
    a = usage_record("t1", 1, "2026-10-03T05:00", traffic=[traffic("x", bytes_in=100, produce=2)])
    b = usage_record("t1", 1, "2026-10-03T05:00", sequence=1,
                     traffic=[traffic("x", bytes_out=40, fetch=1)])
    old = usage_record("t1", 2, "2026-09-30T23:59", traffic=[traffic("x", bytes_in=999)])
    frame = raw_frame(spark, [
        (0, 0, "2026-09-30T23:59:30", old, True),
        (0, 1, "2026-10-01T00:00:05", old, False),   # retry of a record billed in September
        (0, 2, "2026-10-03T05:01", a, False),
        (1, 7, "2026-10-03T05:02", a, False),        # the same key again, another partition
        (0, 3, "2026-10-03T05:01", b, False),
    ])
    # tenant, day, bytes_in, bytes_out, produce, fetch, byte_hours, partition_hours
    assert facts(frame) == [("t1", "2026-10-03", 100, 40, 2, 1, 0, 0)]


def test_storage_hours_are_whole_and_take_the_largest_sample(spark: SparkSession) -> None:
    hour = "2026-10-05T10:00"
    leader_a = usage_record("t1", 1, "2026-10-05T10:10",
                            storage=[storage("x", 0, hour, 3 * GIB), storage("x", 1, hour, 5)])
    leader_b = usage_record("t1", 2, "2026-10-05T10:40", storage=[storage("x", 0, hour, GIB)])
    reported_late = usage_record("t1", 1, "2026-10-01T00:00",
                                 storage=[storage("x", 0, "2026-09-30T23:00", 7)])
    reported_before = usage_record("t1", 1, "2026-09-30T23:59",
                                   storage=[storage("x", 0, "2026-09-30T23:00", 7)])
    frame = raw_frame(spark, [
        (0, 0, "2026-09-30T23:59:50", reported_before, True),
        (0, 1, "2026-10-01T00:00:50", reported_late, False),  # that hour was billed already
        (0, 2, "2026-10-05T10:11", leader_a, False),
        (0, 3, "2026-10-05T10:41", leader_b, False),
    ])
    assert facts(frame) == [("t1", "2026-10-05", 0, 0, 0, 0, 3 * GIB + 5, 2)]


def test_late_window_is_billed_by_arrival_and_dated_by_window(spark: SparkSession) -> None:
    late = usage_record("t2", 1, "2026-09-30T23:59", traffic=[traffic("x", bytes_in=10)])
    frame = raw_frame(spark, [(0, 0, "2026-10-01T00:02", late, False)])
    assert facts(frame) == [("t2", "2026-09-30", 10, 0, 0, 0, 0, 0)]


@pytest.mark.parametrize("value", [
    "not json", {"version": 2, "broker_id": 1, "window_start": 0, "sequence": 0,
                 "tenant": "t"}])
def test_unreadable_records_stop_the_job(spark: SparkSession, value: dict | str) -> None:
    frame = raw_frame(spark, [(0, 5, "2026-10-01T00:00", value, False)])
    with pytest.raises(Exception, match="unreadable __usage record.*partition 0 offset 5"):
        usage_facts(frame).collect()
