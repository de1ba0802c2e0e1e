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
  and a re-send carries identical content, so all copies count once. The job also reads
  a short *lookback* before the month (``LOOKBACK_MS``): a key with a copy there was
  billed last month (its first copy arrived then), so a retry straddling the month
  boundary is not billed twice. Likewise a storage hour (tenant, topic, partition, hour)
  is billed in the month it was first reported.
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

TRAFFIC_COUNTERS = ("bytes_in", "bytes_out", "produce_requests", "fetch_requests")
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
    operator fixes the producer or the job, never the invoice. (This check reads several
    fields of ``value``; the session must set
    ``spark.sql.optimizer.enableJsonExpressionOptimization=false``, as
    :func:`spark.billing.build_session` does, or Spark parses the JSON once per field.)
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

    One linear pipeline, one scan of the source and three hash aggregations (no sort):

    1. every record is exploded into *items* (its traffic entries and storage samples);
    2. items are grouped by record key and position: duplicates of a record collapse
       into one item (``max`` of each counter: equal copies by contract, and still a
       deterministic choice if a producer broke it), flagged ``lookback`` if any copy
       arrived before the month — then the first copy did, and last month billed it;
    3. storage items are grouped by (tenant, topic, partition, hour): largest sample,
       flagged if reported in the lookback; traffic items not flagged are summed;
    4. everything billable is summed per (tenant, day).
    """
    where = F.concat(F.lit("partition "), F.col("partition").cast("string"),
                     F.lit(" offset "), F.col("offset").cast("string"))
    parsed = raw.select(
        F.col("lookback"),
        _checked(F.from_json(F.col("value").cast("string"), USAGE_VALUE_SCHEMA), where)
        .alias("record"))
    items = parsed.select(
        "lookback", "record.broker_id", "record.window_start", "record.sequence",
        "record.tenant", F.posexplode(F.concat(
            F.transform("record.traffic", _traffic_item),
            F.transform("record.storage", _storage_item))).alias("position", "item"))
    counters = (*TRAFFIC_COUNTERS, "stored_bytes")
    # The item's day is not a grouping key here: it is a function of its kind and of
    # window_start or hour_start, which are, so it is derived after the deduplication
    # (one string fewer to hash and shuffle per item).
    distinct_items = items.groupBy(
        "broker_id", "window_start", "sequence", "position", "tenant", "item.kind",
        "item.topic", "item.partition", "item.hour_start",
    ).agg(F.bool_or("lookback").alias("lookback"),
          *[F.max(f"item.{name}").alias(name) for name in counters])
    is_storage = F.col("kind") == "storage"
    dated = distinct_items.withColumn("day", F.when(
        is_storage, _day_of(F.col("hour_start"))).otherwise(_day_of(F.col("window_start"))))
    hours_and_traffic = dated.where(is_storage | ~F.col("lookback")).groupBy(
        "tenant", "kind", "day", "topic", "partition", "hour_start",
    ).agg(F.bool_or("lookback").alias("billed_before"),
          F.max("stored_bytes").alias("stored_bytes"),
          *[F.sum(name).alias(name) for name in TRAFFIC_COUNTERS])
    billed = hours_and_traffic.where(~F.col("billed_before"))
    zero = F.lit(0).cast("long")
    return billed.groupBy("tenant", "day").agg(
        *[F.sum(name).cast("long").alias(name) for name in TRAFFIC_COUNTERS],
        F.sum(F.when(is_storage, F.col("stored_bytes")).otherwise(zero)).cast("long")
        .alias("byte_hours"),
        F.count(F.when(is_storage, F.lit(1))).cast("long").alias("partition_hours"))


def _day_of(epoch_millis: Column) -> Column:
    return F.date_format(F.timestamp_millis(epoch_millis), "yyyy-MM-dd")


def _traffic_item(entry: Column) -> Column:
    """A traffic entry as an item (dated later by its record's usage window)."""
    return _item("traffic", entry["topic"], F.lit(None).cast("int"), F.lit(None).cast("long"),
                 [entry[name] for name in TRAFFIC_COUNTERS], F.lit(0).cast("long"))


def _storage_item(sample: Column) -> Column:
    """A storage sample as an item (dated later by its hour)."""
    return _item("storage", sample["topic"], sample["partition"], sample["hour_start"],
                 [F.lit(0).cast("long")] * len(TRAFFIC_COUNTERS), sample["stored_bytes"])


def _item(kind: str, topic: Column, partition: Column, hour_start: Column,
          traffic: list[Column], stored_bytes: Column) -> Column:
    """The common item struct; absent counters are 0 so sums and maxima need no nulls."""
    zero = F.lit(0).cast("long")
    return F.struct(
        F.lit(kind).alias("kind"), topic.alias("topic"),
        partition.alias("partition"), hour_start.alias("hour_start"),
        *[F.coalesce(value, zero).alias(name)
          for name, value in zip(TRAFFIC_COUNTERS, traffic, strict=True)],
        F.coalesce(stored_bytes, zero).alias("stored_bytes"))
