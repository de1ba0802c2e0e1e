"""The ``__usage`` record format (version 1) and the job's month-of-arrival semantics.

Brokers append one JSON record per (broker id, window start minute, sequence) to the
internal topic ``__usage``, keyed by tenant (docs/billing.md has the full contract and an
example). This module turns the raw records read from Kafka into small per (tenant, day)
usage facts, with no I/O of its own:

* **Month of arrival.** A record is billed in the month whose offset range holds it: per
  partition, offsets ``[ListOffsets(month start), ListOffsets(next month start))``. With
  record timestamps set at append time this is the month in which the record *arrived*
  in ``__usage``; usage of October that arrives on November 1st is billed in November,
  never lost. Consecutive months share their boundary offset, so the months partition
  the log: each record falls in exactly one month, whatever its window says.
* **Deduplication.** A record is identified by ``(broker_id, window_start, sequence)``
  and a re-send carries identical content. Only a key's first occurrence (earliest
  arrival, then partition, then offset) counts. The job also reads a short *lookback*
  before the month (``LOOKBACK_MS``); a key first seen there was billed last month, so
  a retry straddling the month boundary is not billed twice. Likewise a storage hour
  (tenant, topic, partition, hour) is billed in the month it was first reported.
* **Whole hours.** Each reported storage hour counts as one partition-hour (a partition
  that existed for part of an hour is billed the whole hour), and its stored bytes are
  the largest sample reported for that hour (several brokers may report the same hour
  around a leader change; they report copies of the same data, so summing would double
  count).
"""

from __future__ import annotations

from datetime import UTC, datetime

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

USAGE_TOPIC = "__usage"
SCHEMA_VERSION = 1

# Storage samples for hour H may be reported until a little after H ends, and a broker
# re-sends unacknowledged records after a restart; 3 hours covers both with a margin.
LOOKBACK_MS = 3 * 3600 * 1000

TRAFFIC_SCHEMA = StructType([
    StructField("principal", StringType()),
    StructField("client_id", StringType()),
    StructField("topic", StringType()),
    StructField("bytes_in", LongType()),
    StructField("bytes_out", LongType()),
    StructField("produce_requests", LongType()),
    StructField("fetch_requests", LongType()),
])

STORAGE_SCHEMA = StructType([
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("hour_start", LongType()),
    StructField("stored_bytes", LongType()),
])

USAGE_VALUE_SCHEMA = StructType([
    StructField("version", IntegerType()),
    StructField("broker_id", IntegerType()),
    StructField("window_start", LongType()),
    StructField("sequence", IntegerType()),
    StructField("tenant", StringType()),
    StructField("traffic", ArrayType(TRAFFIC_SCHEMA)),
    StructField("storage", ArrayType(STORAGE_SCHEMA)),
])

# Columns of the per (tenant, day) facts; every one is a non-negative count.
FACT_COLUMNS = ("bytes_in", "bytes_out", "produce_requests", "fetch_requests",
                "byte_hours", "partition_hours")


def month_bounds(month: str) -> tuple[datetime, datetime]:
    """``"2026-10"`` -> (2026-10-01T00:00Z, 2026-11-01T00:00Z): the UTC month, half open."""
    start = datetime.strptime(month, "%Y-%m").replace(tzinfo=UTC)
    if start.month == 12:
        return start, start.replace(year=start.year + 1, month=1)
    return start, start.replace(month=start.month + 1)


def epoch_ms(moment: datetime) -> int:
    """Milliseconds since the epoch of an aware datetime (Kafka's timestamp unit)."""
    return int(moment.timestamp() * 1000)


def _checked(value: Column, where: Column) -> Column:
    """The parsed record, or a job failure naming the record when it is not version 1.

    Billing must not silently drop usage, so an unreadable record stops the job; the
    operator fixes the producer or the job, never the invoice.
    """
    bad = (value.isNull() | (value["version"] != SCHEMA_VERSION)
           | value["broker_id"].isNull() | value["window_start"].isNull()
           | value["sequence"].isNull() | value["tenant"].isNull())
    message = F.concat(F.lit("unreadable __usage record (need JSON version 1) at "), where)
    return F.when(bad, F.raise_error(message)).otherwise(value)


def usage_facts(raw: DataFrame) -> DataFrame:
    """Per (tenant, day) usage of the month from raw records of the kafka_range source.

    ``raw`` has the columns ``partition, offset, timestamp_ms, value, lookback``
    (``lookback`` marks records before the month's first offset). The result has one row
    per (tenant, day) with :data:`FACT_COLUMNS` (all longs): traffic by the day of its
    usage window, storage by the day of its hour; ``byte_hours`` is the sum over billed
    (partition, hour) of the hour's stored bytes times one hour.
    """
    where = F.concat(F.lit("partition "), F.col("partition").cast("string"),
                     F.lit(" offset "), F.col("offset").cast("string"))
    parsed = raw.select(
        F.col("partition"), F.col("offset"), F.col("timestamp_ms"), F.col("lookback"),
        _checked(F.from_json(F.col("value").cast("string"), USAGE_VALUE_SCHEMA), where)
        .alias("record"))
    first = parsed.groupBy(
        F.col("record.broker_id"), F.col("record.window_start"), F.col("record.sequence"),
    ).agg(F.min_by(
        F.struct("lookback", "record"),
        F.struct("timestamp_ms", "partition", "offset"),
    ).alias("first"))
    records = first.select(F.col("first.lookback").alias("lookback"),
                           F.col("first.record").alias("record"))
    return _traffic_by_day(records).unionByName(_storage_by_day(records)) \
        .groupBy("tenant", "day").agg(*[F.sum(name).alias(name) for name in FACT_COLUMNS])


def _day_of(epoch_millis: Column) -> Column:
    return F.date_format(F.timestamp_millis(epoch_millis), "yyyy-MM-dd")


def _traffic_by_day(records: DataFrame) -> DataFrame:
    traffic = records.where(~F.col("lookback")).select(
        F.col("record.tenant").alias("tenant"),
        _day_of(F.col("record.window_start")).alias("day"),
        F.explode(F.col("record.traffic")).alias("t"))
    zero = F.lit(0).cast("long")
    return traffic.groupBy("tenant", "day").agg(
        F.sum(F.coalesce(F.col("t.bytes_in"), zero)).alias("bytes_in"),
        F.sum(F.coalesce(F.col("t.bytes_out"), zero)).alias("bytes_out"),
        F.sum(F.coalesce(F.col("t.produce_requests"), zero)).alias("produce_requests"),
        F.sum(F.coalesce(F.col("t.fetch_requests"), zero)).alias("fetch_requests"),
        zero.alias("byte_hours"),
        zero.alias("partition_hours"))


def _storage_by_day(records: DataFrame) -> DataFrame:
    samples = records.select(
        F.col("lookback"), F.col("record.tenant").alias("tenant"),
        F.explode(F.col("record.storage")).alias("s"))
    hours = samples.groupBy(
        "tenant", F.col("s.topic").alias("topic"), F.col("s.partition").alias("partition"),
        F.col("s.hour_start").alias("hour_start"),
    ).agg(F.max("s.stored_bytes").alias("stored_bytes"),
          F.bool_or("lookback").alias("billed_before"))
    zero = F.lit(0).cast("long")
    return hours.where(~F.col("billed_before")).groupBy(
        "tenant", _day_of(F.col("hour_start")).alias("day"),
    ).agg(zero.alias("bytes_in"), zero.alias("bytes_out"),
          zero.alias("produce_requests"), zero.alias("fetch_requests"),
          F.sum(F.coalesce(F.col("stored_bytes"), zero)).alias("byte_hours"),
          F.count(F.lit(1)).cast("long").alias("partition_hours"))
