"""The default path's request-rate ceiling on this machine: ``python -m bench.request_ceiling``.

Why: issue 13 asks three brokers on one 2-core machine to answer 10,000 one-record acks=all
requests/s from several librdkafka producers (``linger.ms=0``, idempotent) within p99 20 ms,
with those producers (and a consumer) on the same two cores.  This measures what is left
of the target once the broker costs as little as a Python server can: the same producers,
paced the same way as ``bench.density``'s several-producer search (2,000 records/s per
process, the same rate steps, at normal priority and at nice 10), against
:mod:`bench.null_broker`, which answers every Produce the moment it reads it and keeps
nothing.  No consumer runs, so the latency is each record's produce round trip (send to
delivery report), a lower bound of the end-to-end latency the density search reports.

A step is sustained when the producers reach 95 % of its rate and the worst producer's
p99 round trip is within the bound.  Each step prints the Produce requests/s the producers
sent (librdkafka batches what waits for one of its five in-flight slots), the cores the
producers used together, and the null broker's CPU per request.  Prints one JSON line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from typing import Any

from bench.density import PRODUCER_RATE, SUSTAINED_SHARE, DensityPlan, producer_args
from bench.measure import process_cpu_seconds
from bench.run_all import CLIENT_OVERHEAD_S, finish_client, start_client

TOPIC = "ceiling"


def start_null_broker() -> tuple[subprocess.Popen[str], str]:
    """The null broker and its bootstrap address."""
    process = start_client("bench.null_broker", [])
    assert process.stdout is not None
    line = process.stdout.readline().split()
    if line[:1] != ["port"]:
        process.kill()
        raise RuntimeError("the null broker did not start: "
                           + process.communicate(timeout=5)[1].strip()[-500:])
    return process, f"127.0.0.1:{line[1]}"


def step(bootstrap: str, broker_pid: int, rate: int, seconds: float, nice: int
         ) -> dict[str, Any]:
    """``rate`` records/s from ``rate / PRODUCER_RATE`` producers for ``seconds``."""
    producers = max(1, rate // PRODUCER_RATE)
    args = ["produce", "--bootstrap", bootstrap, "--topic", TOPIC, "--size", "1024",
            "--rate", str(rate // producers), "--seconds", str(seconds),
            "--broker-pid", str(broker_pid), "--delivery-latency",
            *producer_args(0, nice)]
    broker_before = process_cpu_seconds(broker_pid)
    started = [start_client("bench.latency_client", args) for _ in range(producers)]
    try:
        figures = [finish_client(p, seconds + CLIENT_OVERHEAD_S) for p in started]
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
                process.communicate()
    broker_cpu_s = process_cpu_seconds(broker_pid) - broker_before
    request_rates: list[int | None] = [f.get("requests_per_second") for f in figures]
    requests = None if None in request_rates else sum(r or 0 for r in request_rates)
    window_s = max(f["seconds"] for f in figures)
    return {
        "rate": rate, "producers": producers,
        "records_per_second": sum(f["records_per_second"] for f in figures),
        "produce_requests_per_second": requests,
        "p50_ms": max(f["delivery"].get("p50_ms", float("inf")) for f in figures),
        "p99_ms": max(f["delivery"].get("p99_ms", float("inf")) for f in figures),
        # Each producer's own CPU share over its window, added up: the cores they took.
        "producers_cores": round(sum(f["client_cpu_share"] for f in figures), 2),
        "null_broker_cpu_us_per_request": (round(broker_cpu_s * 1e6 / (requests * window_s))
                                           if requests else None),
    }


def search(bootstrap: str, broker_pid: int, plan: DensityPlan, nice: int) -> dict[str, Any]:
    """Step the rate up until a step misses the bound or the time budget is spent."""
    steps: list[dict[str, Any]] = []
    best = 0
    deadline = time.monotonic() + plan.search_budget_s
    bound_ms = plan.several_producers_p99_bound_ms
    for rate in plan.search_rates:
        if time.monotonic() > deadline:
            steps.append({"rate": rate, "skipped": "search time budget spent"})
            break
        figures = step(bootstrap, broker_pid, rate, plan.search_seconds, nice)
        ok = (figures["records_per_second"] >= SUSTAINED_SHARE * rate
              and figures["p99_ms"] <= bound_ms)
        steps.append({**figures, "sustained": ok})
        if not ok:
            break
        best = rate
    return {"best_rate": best, "p99_bound_ms": bound_ms, "nice": nice, "steps": steps}


def measure(plan: DensityPlan) -> dict[str, Any]:
    broker, bootstrap = start_null_broker()
    try:
        return {f"several producers at nice {nice}": search(bootstrap, broker.pid, plan, nice)
                for nice in (0, plan.client_nice)}
    finally:
        broker.kill()
        broker.communicate()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.request_ceiling",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--rates", help="comma-separated rate steps (records/s)")
    parser.add_argument("--seconds", type=float, help="per step")
    args = parser.parse_args(argv)
    plan = DensityPlan()
    if args.rates:
        plan = dataclasses.replace(plan, search_rates=tuple(int(r) for r in args.rates.split(",")))
    if args.seconds:
        plan = dataclasses.replace(plan, search_seconds=args.seconds)
    print(json.dumps(measure(plan)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
