"""A generated month of raw ``__usage`` rows with every case the deduplication handles.

Deterministic (seeded), so the invoice it gives can be pinned: ``rows()`` yields rows of
the ``kafka_range`` schema for October 2026 and the end of September (the lookback) —
many tenants, topics and days; several traffic entries and storage samples per record;
exact re-sends within and across partitions; retries of September records; storage
hours reported by two brokers with different sizes and hours first reported in the
lookback; late windows dated in September; and amounts large enough to reach the paid
tiers of :data:`PLANS`.
"""

from __future__ import annotations

import json
import random

from tests.billing.usage_records import at, storage, traffic, usage_record

SEED = 18
TENANTS = [f"tenant-{n:02d}" for n in range(12)]
TOPICS = ["orders", "audit", "clicks"]
GIB = 2**30
OCTOBER = at("2026-10-01T00:00")
LOOKBACK_START = at("2026-09-30T21:00")
MINUTE_MS = 60_000
HOUR_MS = 3_600_000


def _price(free: str, *tiers: tuple[str | None, str]) -> dict:
    return {"free": free, "tiers": [{"up_to": up_to, "unit_price": unit_price}
                                    for up_to, unit_price in tiers]}


PLANS = {tenant: {
    "plan": "graduated", "currency": "USD" if n % 2 else "EUR",
    "active_from": "2026-10-10T07:15:00Z" if n % 5 == 0 else None,
    "prices": {
        "data_in_gb": _price("1.5", ("2", "0.10"), ("10", "0.075"), (None, "0.05")),
        "data_out_gb": _price("0", (None, "0.09")),
        "storage_gb_hours": _price("100", ("500", "0.000137"), (None, "0.0001")),
        "partition_hours": _price("10", (None, "0.0015"))}}
    for n, tenant in enumerate(TENANTS)}


def _record(chance: random.Random, broker_id: int, window_ms: int, sequence: int) -> dict:
    tenant = chance.choice(TENANTS)
    entries = [traffic(chance.choice(TOPICS), bytes_in=chance.randrange(GIB // 8),
                       bytes_out=chance.randrange(GIB // 4), produce=chance.randrange(50),
                       fetch=chance.randrange(50), client_id=f"c{chance.randrange(4)}")
               for _ in range(chance.randrange(4))]
    hour_ms = window_ms - window_ms % HOUR_MS
    samples = [storage(chance.choice(TOPICS), chance.randrange(3), "2026-01-01T00:00",
                       chance.randrange(4 * GIB))
               for _ in range(chance.choice((0, 0, 0, 1, 2)))]
    for sample in samples:
        sample["hour_start"] = hour_ms - HOUR_MS * chance.randrange(2)
    record = usage_record(tenant, broker_id, "2026-10-01T00:00", sequence, entries, samples)
    record["window_start"] = window_ms
    return record


def rows(records: int = 6000, partitions: int = 3) -> list[tuple]:
    """(partition, offset, timestamp_ms, key, value, lookback) rows, offsets ascending."""
    chance = random.Random(SEED)
    offsets = [0] * partitions
    out: list[tuple] = []

    def append(partition: int, arrival_ms: int, record: dict, lookback: bool) -> None:
        out.append((partition, offsets[partition], arrival_ms, record["tenant"].encode(),
                    json.dumps(record).encode(), lookback))
        offsets[partition] += 1

    span_ms = at("2026-11-01T00:00") - LOOKBACK_START
    for index in range(records):
        window_ms = LOOKBACK_START + (index * span_ms // records) // MINUTE_MS * MINUTE_MS
        if chance.random() < 0.02:
            window_ms -= chance.randrange(1, 30) * MINUTE_MS  # a late window
        record = _record(chance, 1 + index % 3, window_ms, index // 3)
        arrival_ms = max(window_ms + 30_000, LOOKBACK_START)
        partition = chance.randrange(partitions)
        append(partition, arrival_ms, record, arrival_ms < OCTOBER)
        if arrival_ms < OCTOBER and chance.random() < 0.3:  # a retry after the month began
            append(chance.randrange(partitions), OCTOBER + chance.randrange(MINUTE_MS),
                   record, False)
        if chance.random() < 0.05:  # a re-send, maybe to another partition, maybe later
            again = max(arrival_ms + chance.randrange(3) * MINUTE_MS, arrival_ms)
            append(chance.randrange(partitions), again, record, again < OCTOBER)
    return out
