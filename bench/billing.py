"""Billing benchmark: N usage records into ``__usage``, then the billing job on local[2].

    .venv/bin/python bench/billing.py [--records 10000000] [--partitions 4] [--tenants 500]
        [--baseline DIR] [--rounds 1] [--master local[2]]

Starts a private ZooKeeper and broker (:class:`bench.cluster.Cluster`), creates
``__usage`` with ``--partitions`` partitions, produces ``--records`` distinct version-1
records (one traffic entry each, every 60th also a storage sample) spread over October
2026, then runs ``python spark/billing.py --month 2026-10 --master local[2]`` as an
operator would and reports wall times. The job's own progress lines pass through.

Generation is cheap on purpose: each record is a pre-encoded byte template filled with
``%`` formatting (no JSON encoder), produced with large linger/batch settings, so the
figure measured is the job's, not the generator's. Record ``i`` has broker ``i % 3 + 1``,
window minute ``i // 3000`` after October 1st and sequence ``(i % 3000) // 3``, so the
(broker, window, sequence) keys are all distinct and the job deduplicates nothing away:
the invoice's data-in usage must equal the bytes generated, which is checked.

``--baseline DIR`` also runs the job of another checkout (e.g. ``git worktree add DIR
<rev>``) on the same records, alternating with this checkout's for ``--rounds`` rounds, so
old and new code are measured in the same run under the same machine load; each timing
line gives the 1-minute load average before and after the job, and the two checkouts'
invoice files must be byte-identical.
"""

from __future__ import annotations

import argparse
import csv
import filecmp
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.cluster import Cluster  # noqa: E402

MONTH = "2026-10"
OCTOBER_MS = 1790812800000  # 2026-10-01T00:00:00Z
MINUTE_MS = 60_000
HOUR_MS = 3_600_000
BYTES_IN = 4096  # per record

TRAFFIC_ONLY = (b'{"version":1,"broker_id":%d,"window_start":%d,"sequence":%d,"tenant":"%s",'
                b'"traffic":[{"principal":"User:app","client_id":"c1","topic":"orders",'
                b'"bytes_in":%d,"bytes_out":%d,"produce_requests":1,"fetch_requests":1}],'
                b'"storage":[]}')
WITH_STORAGE = (b'{"version":1,"broker_id":%d,"window_start":%d,"sequence":%d,"tenant":"%s",'
                b'"traffic":[{"principal":"User:app","client_id":"c1","topic":"orders",'
                b'"bytes_in":%d,"bytes_out":%d,"produce_requests":1,"fetch_requests":1}],'
                b'"storage":[{"topic":"orders","partition":%d,"hour_start":%d,'
                b'"stored_bytes":1073741824}]}')


def plans_for(tenants: int) -> dict:
    flat = {"free": "0", "tiers": [{"up_to": None, "unit_price": "0.10"}]}
    prices = {key: flat for key in ("data_in_gb", "data_out_gb", "storage_gb_hours",
                                    "partition_hours")}
    return {f"t{n}": {"plan": "bench", "prices": prices} for n in range(tenants)}


def generate(bootstrap: str, records: int, partitions: int, tenants: int) -> int:
    """Produce the records; returns the total bytes_in they carry."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("__usage", partitions, 1)])["__usage"].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50,
                         "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
                         "queue.buffering.max.kbytes": 512 * 1024, "acks": 1})
    tenant_names = [f"t{n}".encode() for n in range(tenants)]
    started = time.monotonic()
    for i in range(records):
        window = OCTOBER_MS + (i // 3000) * MINUTE_MS
        tenant = tenant_names[i % tenants]
        if i % 60 == 0:
            value = WITH_STORAGE % (i % 3 + 1, window, (i % 3000) // 3, tenant, BYTES_IN,
                                    BYTES_IN // 2, i // 60, window - window % HOUR_MS)
        else:
            value = TRAFFIC_ONLY % (i % 3 + 1, window, (i % 3000) // 3, tenant, BYTES_IN,
                                    BYTES_IN // 2)
        while True:
            try:
                producer.produce("__usage", value, tenant, partition=i % partitions,
                                 timestamp=window + 30_000)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 100_000 == 0:
            producer.poll(0)
            if i and i % 1_000_000 == 0:
                rate = i / (time.monotonic() - started)
                print(f"bench: produced {i:,} records ({rate:,.0f}/s)", file=sys.stderr)
    if producer.flush(120) != 0:
        raise RuntimeError("records left unacknowledged")
    return records * BYTES_IN


def run_job(checkout: Path, bootstrap: str, plans: Path, out: Path, master: str) -> float:
    """Wall seconds of ``checkout``'s billing job, started as an operator would."""
    started = time.monotonic()
    subprocess.run([sys.executable, str(checkout / "spark" / "billing.py"), "--month", MONTH,
                    "--bootstrap", bootstrap, "--plans", str(plans), "--out", str(out),
                    "--master", master], check=True, cwd=checkout)
    return time.monotonic() - started


def billed_bytes_in(month_dir: Path) -> int:
    with open(month_dir / "invoice_lines.csv", encoding="utf-8") as lines:
        return sum(int(row["usage"]) for row in csv.DictReader(lines)
                   if row["dimension"] == "data_in")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--tenants", type=int, default=500)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--baseline", type=Path,
                        help="another checkout whose job runs on the same records")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()

    checkouts = {"this": REPO_ROOT}
    if args.baseline is not None:
        checkouts["baseline"] = args.baseline.resolve()
    timings: dict[str, list[str]] = {name: [] for name in checkouts}
    cluster = Cluster.start()
    try:
        started = time.monotonic()
        expected_bytes_in = generate(cluster.bootstrap, args.records, args.partitions,
                                     args.tenants)
        generated_s = time.monotonic() - started
        print(f"bench: generated {args.records:,} records in {generated_s:.1f}s",
              file=sys.stderr)
        with tempfile.TemporaryDirectory(prefix="bench-billing-") as scratch:
            plans = Path(scratch) / "plans.json"
            plans.write_text(json.dumps(plans_for(args.tenants)))
            for round_number in range(args.rounds):
                order = list(checkouts)
                if round_number % 2:
                    order.reverse()
                for name in order:
                    out = Path(scratch) / name
                    load_before = os.getloadavg()[0]
                    job_s = run_job(checkouts[name], cluster.bootstrap, plans, out,
                                    args.master)
                    load_after = os.getloadavg()[0]
                    timings[name].append(f"{job_s:.1f}s (load {load_before:.1f}->"
                                         f"{load_after:.1f})")
                    billed_in = billed_bytes_in(out / MONTH)
                    if billed_in != expected_bytes_in:
                        raise SystemExit(f"{name}: billed {billed_in} bytes in, "
                                         f"generated {expected_bytes_in}")
            if args.baseline is not None:
                names = sorted(path.name for path in (Path(scratch) / "this" / MONTH).iterdir())
                _, mismatch, errors = filecmp.cmpfiles(
                    Path(scratch) / "this" / MONTH, Path(scratch) / "baseline" / MONTH,
                    names, shallow=False)
                if mismatch or errors:
                    raise SystemExit(f"invoice files differ from the baseline: "
                                     f"{mismatch + errors}")
    finally:
        cluster.stop()
    for name, runs in timings.items():
        print(f"billing job ({name}: {checkouts[name]}) on {args.master}: {args.records:,} "
              f"records, {args.partitions} partitions, {args.tenants} tenants: "
              f"{', '.join(runs)}; generation {generated_s:.1f}s")
    if args.baseline is not None:
        print("invoice files identical to the baseline's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
