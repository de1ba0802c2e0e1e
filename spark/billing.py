"""The monthly billing job: a month of ``__usage`` in, invoices and line items out.

Usage (both forms run the same code; see docs/billing.md)::

    spark-submit spark/billing.py --month 2026-10 --bootstrap HOST:PORT \\
        --plans plans.json --out DIR [--master spark://HOST:7077] [--conf KEY=VALUE ...]
    python spark/billing.py ...            # --master defaults to local[*]

Steps: plan one Spark task per ``__usage`` partition (:mod:`spark.kafka_source`), which
reads its partition's records and reduces them to per (tenant, day) facts itself
(:mod:`spark.facts`, :func:`month_facts`), price
each tenant's lines on the driver (:mod:`spark.pricing.invoice`, shared with the control plane's
live cost meter) and write ``DIR/<month>/`` (:mod:`spark.output`):

* ``invoices.{parquet,csv}``: month, tenant, plan, currency, period_start, period_end,
  total — one row per tenant in the plans file, sorted by tenant.
* ``invoice_lines.{parquet,csv}``: month, tenant, line, dimension, unit, usage, quantity,
  free, billable, amount, currency — four lines per tenant, sorted by (tenant, line).
* ``usage_daily.{parquet,csv}``: month, tenant, day and the raw daily counters, sorted
  by (tenant, day), for the console's charts.

Re-running a month over the same log writes byte-identical files.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import sys
import tempfile
import zipfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):
    # Run as a script (spark-submit spark/billing.py): make the ``spark`` and ``pricing``
    # packages importable.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa
from pyspark.sql import DataFrame, Row, SparkSession

from spark.facts import FACT_COLUMNS
from spark.kafka_source import SOURCE_NAME, KafkaRangeSource
from spark.output import replace_directory, write_table
from spark.pricing.invoice import price_month, total
from spark.pricing.plans import TenantPlan, load_plans
from spark.progress import StageProgress, say
from spark.usage import LOOKBACK_MS, USAGE_TOPIC, epoch_ms, month_bounds, usage_facts

# Which usage fact each priced dimension counts.
USAGE_COLUMN = {"data_in": "bytes_in", "data_out": "bytes_out", "storage": "byte_hours",
                "partition_hours": "partition_hours"}

MONEY = pa.decimal128(18, 2)
QUANTITY = pa.decimal128(20, 6)
INVOICE_SCHEMA = pa.schema([
    ("month", pa.string()), ("tenant", pa.string()), ("plan", pa.string()),
    ("currency", pa.string()), ("period_start", pa.string()), ("period_end", pa.string()),
    ("total", MONEY)])
LINE_SCHEMA = pa.schema([
    ("month", pa.string()), ("tenant", pa.string()), ("line", pa.int32()),
    ("dimension", pa.string()), ("unit", pa.string()), ("usage", pa.int64()),
    ("quantity", QUANTITY), ("free", QUANTITY), ("billable", QUANTITY),
    ("amount", MONEY), ("currency", pa.string())])
DAILY_SCHEMA = pa.schema([("month", pa.string()), ("tenant", pa.string()),
                          ("day", pa.string())]
                         + [(name, pa.int64()) for name in FACT_COLUMNS])


def read_usage(spark: SparkSession, bootstrap: str, month: str,
               topic: str = USAGE_TOPIC, output: str = "records") -> DataFrame:
    """The raw records of ``month`` (plus the dedup lookback), one task per partition, or
    with ``output="facts"`` each partition's facts (see :mod:`spark.kafka_source`)."""
    start, end = month_bounds(month)
    return spark.read.format(SOURCE_NAME).options(**{
        "bootstrap.servers": bootstrap, "topic": topic,
        "start_ms": str(epoch_ms(start)), "end_ms": str(epoch_ms(end)),
        "lookback_ms": str(LOOKBACK_MS), "output": output}).load()


def month_facts(spark: SparkSession, bootstrap: str, month: str,
                topic: str = USAGE_TOPIC) -> list[Row]:
    """The month's per (tenant, day) facts, each partition reduced by the task reading it.

    That is exact for every tenant whose records (lookback included) all lie in one
    partition, which the tenant key gives as long as the partition count of ``topic`` is
    unchanged; each task also reports the tenants it saw. Tenants seen in several
    partitions (after partitions were added, say) are recomputed from their raw records
    with a shuffle by tenant (:func:`spark.usage.usage_facts`), so a copy of a record in
    another partition still counts once.
    """
    with StageProgress(spark.sparkContext):
        partial = read_usage(spark, bootstrap, month, topic, output="facts").collect()
    facts, spread = single_partition_facts(partial)
    if spread:
        say(f"{month}: {len(spread)} tenants have records in several partitions; "
            f"deduplicating them across partitions")
        with StageProgress(spark.sparkContext):
            facts += usage_facts(read_usage(spark, bootstrap, month, topic), spread).collect()
    return facts


def single_partition_facts(partial: Sequence[Row]) -> tuple[list[Row], list[str]]:
    """Of the rows of the source's ``output=facts``: the facts of the tenants seen in one
    partition only, and the sorted tenants seen in several (their facts are partial)."""
    partitions_of: dict[str, set[int]] = defaultdict(set)
    for row in partial:
        partitions_of[row.tenant].add(row.partition)
    spread = sorted(tenant for tenant, partitions in partitions_of.items()
                    if len(partitions) > 1)
    return [row for row in partial if row.day is not None and row.tenant not in spread], spread


def bill(facts: Sequence[Row], month: str,
         plans: dict[str, TenantPlan]) -> dict[str, list[tuple]]:
    """Rows of each output table (sorted) for ``month`` from its per (tenant, day) facts.

    The facts are small (tenants x days); the month's totals per tenant are exact
    integer sums of them, priced on the driver by :func:`spark.pricing.invoice.price_month`
    (the live cost meter's pricing too).
    """
    start, end = month_bounds(month)
    say(f"{month}: usage of {len(facts)} tenant-days")
    unpriced = sorted({row.tenant for row in facts} - plans.keys())
    if unpriced:
        raise ValueError(f"tenants with usage but no plan: {', '.join(unpriced)}")

    sums = {tenant: dict.fromkeys(FACT_COLUMNS, 0) for tenant in plans}
    for row in facts:
        tenant_sums = sums[row.tenant]
        for name in FACT_COLUMNS:
            tenant_sums[name] += row[name]
    line_rows, invoice_rows = [], []
    for tenant in sorted(plans):
        usage = {dimension: sums[tenant][column] for dimension, column in USAGE_COLUMN.items()}
        lines = price_month(plans[tenant], start, end, usage)
        line_rows += [(month, tenant, line.line, line.dimension, line.unit, line.usage,
                       line.quantity, line.free, line.billable, line.amount,
                       plans[tenant].currency) for line in lines]
        invoice_rows.append((month, tenant, plans[tenant].plan, plans[tenant].currency,
                             start.isoformat(), end.isoformat(), total(lines)))
    # Python orders str by code point, as Spark orders strings by their UTF-8 bytes.
    daily_rows = [(month, row.tenant, row.day, *(row[name] for name in FACT_COLUMNS))
                  for row in sorted(facts, key=lambda row: (row.tenant, row.day))]
    return {"invoices": invoice_rows, "invoice_lines": line_rows, "usage_daily": daily_rows}


def write_month(out_dir: Path, month: str, tables: dict[str, list[tuple]]) -> Path:
    """Write the month's tables to ``out_dir/<month>/`` and return that directory."""
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{month}.", dir=out_dir))
    schemas = {"invoices": INVOICE_SCHEMA, "invoice_lines": LINE_SCHEMA,
               "usage_daily": DAILY_SCHEMA}
    for name, rows in tables.items():
        write_table(staging, name, schemas[name], rows)
    target = out_dir / month
    replace_directory(staging, target)
    return target


def run_billing(spark: SparkSession, month: str, bootstrap: str, plans: dict[str, TenantPlan],
                out_dir: Path, topic: str = USAGE_TOPIC) -> Path:
    """Bill ``month``: read, price, write. Returns ``out_dir/<month>``."""
    spark.dataSource.register(KafkaRangeSource)
    tasks = read_usage(spark, bootstrap, month, topic).rdd.getNumPartitions()
    say(f"{month}: reading {topic} with {tasks} tasks (one per partition)")
    facts = month_facts(spark, bootstrap, month, topic)
    target = write_month(out_dir, month, bill(facts, month, plans))
    say(f"{month}: wrote {target}")
    return target


def ship_package(spark: SparkSession) -> None:
    """Send the ``spark`` package to the executors (they unpickle the data source by
    module name, and a cluster's workers do not have this checkout on their path)."""
    package = Path(__file__).resolve().parent
    directory = tempfile.mkdtemp(prefix="billing-")
    # Executors fetch it while the session lives, so it goes when this process does.
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    archive = Path(directory) / "billing_job.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for source in sorted(package.rglob("*.py")):
            bundle.write(source, f"spark/{source.relative_to(package)}")
    spark.sparkContext.addPyFile(str(archive))


def build_session(master: str | None, conf: Sequence[str]) -> SparkSession:
    """A session with small default memory; ``--conf`` pairs override the defaults.

    Under spark-submit (which exports ``PYSPARK_GATEWAY_PORT`` to the driver) the master
    comes from spark-submit unless ``--master`` is given; a plain ``python`` run defaults
    to ``local[*]``. Executors run this interpreter unless ``PYSPARK_PYTHON`` says
    otherwise, so they have pyarrow and confluent-kafka.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("kafkasaas-billing")
    if master is not None:
        builder = builder.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master("local[*]")
    settings = {"spark.driver.memory": "512m", "spark.executor.memory": "512m",
                "spark.sql.session.timeZone": "UTC", "spark.ui.showConsoleProgress": "false",
                "spark.sql.shuffle.partitions": "8"}
    for pair in conf:
        key, _, value = pair.partition("=")
        settings[key] = value
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    ship_package(spark)
    return spark


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Bill one UTC month of __usage.")
    parser.add_argument("--month", required=True, help="YYYY-MM (UTC)")
    parser.add_argument("--bootstrap", required=True, help="HOST:PORT of a broker")
    parser.add_argument("--plans", required=True, type=Path, help="plans JSON file")
    parser.add_argument("--out", required=True, type=Path, help="output root directory")
    parser.add_argument("--master", help="Spark master (default: spark-submit's or local[*])")
    parser.add_argument("--topic", default=USAGE_TOPIC)
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="extra Spark setting (repeatable)")
    args = parser.parse_args(argv)
    try:
        month_bounds(args.month)
    except ValueError:
        parser.error(f"--month {args.month!r}: expected YYYY-MM")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    plans = load_plans(args.plans)
    spark = build_session(args.master, args.conf)
    try:
        run_billing(spark, args.month, args.bootstrap, plans, args.out, args.topic)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
