"""Offset planning against a real broker: ListOffsets by timestamp, one range per
partition, consecutive months meeting at the same offset."""

from __future__ import annotations

from spark.kafka_source import OffsetRange, plan_ranges
from spark.usage import LOOKBACK_MS, USAGE_TOPIC, epoch_ms, month_bounds
from tests.integration.brokerd.broker_process import BrokerProcess


def month_ranges(bootstrap: str, month: str) -> list[OffsetRange]:
    start, end = month_bounds(month)
    return plan_ranges(bootstrap, USAGE_TOPIC, epoch_ms(start), epoch_ms(end), LOOKBACK_MS)


def test_month_ranges_partition_the_log(usage_broker: BrokerProcess) -> None:
    # The October scenario (tests/billing/october.py), per partition, by offset:
    # p0: Sep 30 23:59 (lookback), Oct 1 00:00:10, Oct 2 10:01, Oct 2 10:05
    # p1: Sep 15, Oct 15, Nov 1 00:00:30;  p2: Oct 20, Oct 20
    assert month_ranges(usage_broker.bootstrap, "2026-10") == [
        OffsetRange(partition=0, from_offset=0, start_offset=1, end_offset=4),
        OffsetRange(partition=1, from_offset=1, start_offset=1, end_offset=2),
        OffsetRange(partition=2, from_offset=0, start_offset=0, end_offset=2)]
    # November starts where October ends; partitions without newer records end at the
    # high watermark.
    assert month_ranges(usage_broker.bootstrap, "2026-11") == [
        OffsetRange(partition=0, from_offset=4, start_offset=4, end_offset=4),
        OffsetRange(partition=1, from_offset=2, start_offset=2, end_offset=3),
        OffsetRange(partition=2, from_offset=2, start_offset=2, end_offset=2)]
