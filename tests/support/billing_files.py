"""The billing job's output files, written by hand in its documented CSV format
(docs/billing.md, "Output files"), for tests of what the control plane does with them."""

from __future__ import annotations

import csv
from pathlib import Path


def write_csv(path: Path, rows: list[dict[str, object]]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def job_output(directory: Path, tenant: str, total: str) -> Path:
    """A month directory in the job's documented CSV format (docs/billing.md)."""
    month_dir = directory / "2026-10"
    month_dir.mkdir(parents=True)
    write_csv(month_dir / "invoices.csv", [{
        "month": "2026-10", "tenant": tenant, "plan": "basic", "currency": "EUR",
        "period_start": "2026-10-01T00:00:00+00:00", "period_end": "2026-11-01T00:00:00+00:00",
        "total": total}])
    write_csv(month_dir / "invoice_lines.csv", [{
        "month": "2026-10", "tenant": tenant, "line": line, "dimension": dimension, "unit": "GB",
        "usage": 32 * 2**30, "quantity": "32.000000", "free": "10.000000", "billable": "22.000000",
        "amount": total if line == 1 else "0.00", "currency": "EUR"}
        for line, dimension in ((1, "data_in"), (2, "data_out"))])
    write_csv(month_dir / "usage_daily.csv", [{
        "month": "2026-10", "tenant": tenant, "day": "2026-10-05", "bytes_in": 32 * 2**30,
        "bytes_out": 0, "produce_requests": 7, "fetch_requests": 0, "byte_hours": 0,
        "partition_hours": 3}])
    return month_dir
