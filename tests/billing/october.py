"""The October scenario shared by the end-to-end and cluster tests: two tenants' plans,
known ``__usage`` records (duplicates, a lookback retry, late usage) and the invoice lines
they must give."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.billing.usage_records import storage, traffic, usage_record

GIB = 2**30

PLANS = {
    "acme": {"plan": "pro", "currency": "USD", "prices": {
        "data_in_gb": {"free": "1", "tiers": [{"up_to": "2", "unit_price": "0.10"},
                                               {"up_to": None, "unit_price": "0.05"}]},
        "data_out_gb": {"free": "0", "tiers": [{"up_to": None, "unit_price": "0.09"}]},
        "storage_gb_hours": {"free": "0.5", "tiers": [{"up_to": None, "unit_price": "0.10"}]},
        "partition_hours": {"free": "0", "tiers": [{"up_to": None, "unit_price": "0.01"}]}}},
    # Active for exactly half of October (372 of 744 hours): half the free allowance.
    "globex": {"plan": "starter", "currency": "EUR", "active_from": "2026-10-16T12:30:00Z",
               "prices": {
        "data_in_gb": {"free": "2", "tiers": [{"up_to": None, "unit_price": "0.10"}]},
        "data_out_gb": {"free": "0", "tiers": [{"up_to": None, "unit_price": "0.09"}]},
        "storage_gb_hours": {"free": "0", "tiers": [{"up_to": None, "unit_price": "0.10"}]},
        "partition_hours": {"free": "0", "tiers": [{"up_to": None, "unit_price": "0.01"}]}}},
}

# (partition, arrival time, record); arrival times increase within each partition.
R0 = usage_record("acme", 1, "2026-09-30T23:58", traffic=[traffic("orders", bytes_in=7 * GIB)])
R1 = usage_record("acme", 1, "2026-10-02T10:00",
                  traffic=[traffic("orders", bytes_in=3 * GIB, produce=100)],
                  storage=[storage("orders", 0, "2026-10-02T10:00", 2 * GIB)])
R2 = usage_record("acme", 2, "2026-10-15T08:30",
                  traffic=[traffic("orders", bytes_out=5 * GIB + GIB // 2, fetch=50),
                           traffic("audit", bytes_in=GIB, principal="User:ops")],
                  storage=[storage("orders", 0, "2026-10-02T10:00", GIB),
                           storage("orders", 1, "2026-10-15T08:00", GIB)])
R3_LATE = usage_record("acme", 1, "2026-10-31T23:59", traffic=[traffic("orders", bytes_in=GIB)])
G1 = usage_record("globex", 1, "2026-10-20T00:00", sequence=1,
                  traffic=[traffic("logs", bytes_in=GIB + GIB // 2)],
                  storage=[storage("logs", p, "2026-10-20T00:00", GIB) for p in range(3)])
G2 = usage_record("globex", 1, "2026-10-20T00:00", sequence=2,
                  traffic=[traffic("logs", bytes_in=GIB // 2)])
SEPTEMBER = usage_record("acme", 3, "2026-09-15T00:00", traffic=[traffic("x", bytes_in=GIB)])

RECORDS = [
    (0, "2026-09-30T23:59:00", R0),
    (0, "2026-10-01T00:00:10", R0),          # a retry across the boundary: billed in September
    (0, "2026-10-02T10:01:00", R1),
    (0, "2026-10-02T10:05:00", R1),          # a retry inside the month: counted once
    (1, "2026-09-15T00:01:00", SEPTEMBER),   # September, outside the lookback: not read
    (1, "2026-10-15T08:31:00", R2),
    (1, "2026-11-01T00:00:30", R3_LATE),     # October's last minute, arrived in November
    (2, "2026-10-20T00:01:00", G1),
    (2, "2026-10-20T00:01:00", G2),
]

EXPECTED_OCTOBER_LINES = {
    # 3 GiB (R1 once) + 1 GiB (R2); R0 belongs to September. 1 free, 1 at 0.10, 1 at 0.05.
    ("acme", "data_in"): (4 * GIB, "4.000000", "1.000000", "3.000000", "0.25"),
    # 5.5 GB at 0.09 = 0.495, half up to 0.50.
    ("acme", "data_out"): (5 * GIB + GIB // 2, "5.500000", "0.000000", "5.500000", "0.50"),
    # (orders,0,10:00) max(2,1) GiB + (orders,1,08:00) 1 GiB = 3 GB-hours, 0.5 free.
    ("acme", "storage"): (3 * GIB, "3.000000", "0.500000", "2.500000", "0.25"),
    ("acme", "partition_hours"): (2, "2.000000", "0.000000", "2.000000", "0.02"),
    # Sequences 1 and 2 are distinct records: 2 GiB; the allowance is prorated to 1.
    ("globex", "data_in"): (2 * GIB, "2.000000", "1.000000", "1.000000", "0.10"),
    ("globex", "data_out"): (0, "0.000000", "0.000000", "0.000000", "0.00"),
    ("globex", "storage"): (3 * GIB, "3.000000", "0.000000", "3.000000", "0.30"),
    ("globex", "partition_hours"): (3, "3.000000", "0.000000", "3.000000", "0.03"),
}


def line_table(directory: Path) -> dict[tuple[str, str], dict[str, str]]:
    with open(directory / "invoice_lines.csv", encoding="utf-8") as handle:
        return {(row["tenant"], row["dimension"]): row for row in csv.DictReader(handle)}


def line_quantities(directory: Path) -> dict[tuple[str, str], tuple[int, str, str, str, str]]:
    """(tenant, dimension) -> (usage, quantity, free, billable, amount) from the CSV."""
    return {key: (int(row["usage"]), row["quantity"], row["free"], row["billable"],
                  row["amount"]) for key, row in line_table(directory).items()}

