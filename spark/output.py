"""Invoice files: written byte-identically for identical rows.

Why the driver writes them and not Spark's writers: the outputs are small (a few rows
per tenant), the out directory is the driver's (a cluster's executors may not share its
disk), and Spark's writers name files with random ids. Here each table is written once
as ``<name>.parquet`` (pyarrow, no timestamps in the file) and once as ``<name>.csv``
(header row, ``,`` separated, ``\\n`` line ends, decimals in plain notation), rows in the
order given. A month's directory is written beside the target and renamed into place,
so a reader sees either the previous complete set or the new one.
"""

from __future__ import annotations

import csv
import shutil
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def _csv_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def write_table(directory: Path, name: str, schema: pa.Schema,
                rows: Sequence[Sequence[object]]) -> None:
    """Write ``rows`` (tuples in ``schema``'s column order) as Parquet and CSV."""
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    table = pa.table([pa.array(list(column), type=field.type)
                      for column, field in zip(columns, schema, strict=True)], schema=schema)
    pq.write_table(table, directory / f"{name}.parquet", compression="snappy",
                   write_statistics=True, store_schema=True)
    with open(directory / f"{name}.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(schema.names)
        writer.writerows([_csv_text(value) for value in row] for row in rows)


def replace_directory(staging: Path, target: Path) -> None:
    """Move the finished ``staging`` directory to ``target``, replacing an older one."""
    if target.exists():
        retired = target.with_name(f".{target.name}.old")
        shutil.rmtree(retired, ignore_errors=True)
        target.rename(retired)
        staging.rename(target)
        shutil.rmtree(retired)
    else:
        staging.rename(target)
