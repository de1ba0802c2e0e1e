"""``make bench``: the data-plane benchmark, in one bounded run on 127.0.0.1.

Steps: start a private ZooKeeper and one broker process (:mod:`bench.cluster`); produce
1 KiB and 100 B records with confluent-kafka from a separate process, then consume them
back from another (:mod:`bench.throughput_client`); measure end-to-end latency at a
moderate fixed rate with a concurrent producer/consumer pair (:mod:`bench.latency_client`);
time a consumer group's rebalance when a fourth member joins (:mod:`bench.rebalance`);
measure this machine's loopback and file-write ceiling for the same volume
(:mod:`bench.ceiling`); run the log-engine micro-benchmark (:mod:`bench.storage_append`).
Prints a table and writes ``bench/results/latest.json``.

Then the density phases of issue 13 (:mod:`bench.density`: the acks=all default client
path on three brokers, idle partitions and connections, failover at scale, NATS JetStream
and Redis Streams doing the same work), unless ``--skip-density``.

Every phase is bounded in records and in seconds: the data-plane phases take about 1.5
minutes, the density phases about 6 (about 1.5 with ``--quick``); a phase that fails is
reported as failed and the others still run.

``--profile PHASE`` instead runs the broker under cProfile for that one throughput phase
(a consume phase first produces what it reads, so its profile includes that produce; the
profile clock is the event loop's CPU time, see :mod:`bench.profiled_broker`) and
prints the broker's hottest functions.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import pstats
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, cast

REPO_ROOT = Path(__file__).resolve().parents[1]
# ``python bench/run_all.py`` puts bench/ (not the repository) first on sys.path.
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench import ceiling, rebalance, storage_append  # noqa: E402
from bench.cluster import Cluster  # noqa: E402
from bench.latency_client import READY  # noqa: E402
from bench.measure import machine_busy_seconds  # noqa: E402
from bench.report import render, write_json  # noqa: E402

RESULTS_DIR = REPO_ROOT / "bench" / "results"
# Headroom over a phase's own time cap for process start-up, connecting and the final flush.
CLIENT_OVERHEAD_S = 40.0
# Below this many busy cores (of everything else) a 2-core machine counts as quiet.
QUIET_CORES = 0.3
PROFILED_PHASES = ("produce-1k", "consume-1k", "produce-100", "consume-100")


@dataclasses.dataclass(frozen=True)
class Plan:
    """How much each phase does; every count is also capped by ``phase_seconds``."""

    records_1k: int = 1_500_000
    records_100: int = 4_000_000
    phase_seconds: float = 20.0
    latency_size: int = 1024
    latency_rate: int = 2_000
    latency_seconds: float = 10.0
    storage_megabytes: int = 512
    rebalance_rounds: int = 3

    def quick(self) -> Plan:
        """A tenth of the work: a smoke test of the harness, not a measurement."""
        return dataclasses.replace(
            self, records_1k=self.records_1k // 10, records_100=self.records_100 // 10,
            latency_seconds=2.0, storage_megabytes=self.storage_megabytes // 10,
            rebalance_rounds=1)


def start_client(module: str, args: list[str]) -> subprocess.Popen[str]:
    """Start ``python -m module args`` with its stdout and stderr piped (text)."""
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish_client(client: subprocess.Popen[str], timeout_s: float) -> dict[str, Any]:
    """Wait for a started client and return the JSON of its last line; a client still
    running after ``timeout_s`` is killed (never left behind) and reported as an error."""
    try:
        output, errors = client.communicate(timeout=timeout_s)
    finally:
        if client.poll() is None:
            client.kill()
            client.communicate()
    if client.returncode != 0 or not output.strip():
        module = cast(list[str], client.args)[2]
        raise RuntimeError(f"{module} exited with {client.returncode}: "
                           f"{errors.strip()[-500:]}")
    result: dict[str, Any] = json.loads(output.splitlines()[-1])
    return result


def run_client(module: str, args: list[str], timeout_s: float) -> dict[str, Any]:
    """Run ``python -m module args`` to completion and return the JSON of its last line."""
    return finish_client(start_client(module, args), timeout_s)


def guarded(step: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The step's figures, or ``{"error": …}`` so one failed phase does not end the run."""
    try:
        return step()
    except Exception as exc:  # noqa: BLE001 - reported in the table and the JSON
        return {"error": f"{type(exc).__name__}: {exc}"}


def produce(cluster: Cluster, topic: str, size: int, count: int, plan: Plan) -> dict[str, Any]:
    return run_client("bench.throughput_client", [
        "produce", "--bootstrap", cluster.bootstrap, "--topic", topic, "--size", str(size),
        "--count", str(count), "--max-seconds", str(plan.phase_seconds),
        "--broker-pid", str(cluster.broker_pid)], plan.phase_seconds + CLIENT_OVERHEAD_S)


def consume(cluster: Cluster, topic: str, count: int, plan: Plan) -> dict[str, Any]:
    return run_client("bench.throughput_client", [
        "consume", "--bootstrap", cluster.bootstrap, "--topic", topic, "--count", str(count),
        "--max-seconds", str(plan.phase_seconds), "--broker-pid", str(cluster.broker_pid)],
        plan.phase_seconds + CLIENT_OVERHEAD_S)


def throughput(cluster: Cluster, plan: Plan, sizes: list[tuple[str, int, int]]
               ) -> dict[str, dict[str, Any]]:
    """Produce then consume each ``(label, payload size, records)``; the consumer reads
    exactly what the producer got acknowledged."""
    results: dict[str, dict[str, Any]] = {}
    for label, size, count in sizes:
        topic = f"bench-{size}"
        produced = guarded(partial(produce, cluster, topic, size, count, plan))
        results[f"produce {label}"] = produced
        if produced.get("records"):
            results[f"consume {label}"] = guarded(
                partial(consume, cluster, topic, produced["records"], plan))
    return results


def latency(cluster: Cluster, plan: Plan) -> dict[str, Any]:
    """The acks=1, linger.ms=5 probe of ``make bench`` against the single broker."""
    return {"size": plan.latency_size, "rate": plan.latency_rate,
            "seconds": plan.latency_seconds,
            **latency_probe(cluster.bootstrap, "bench-latency", cluster.broker_pid,
                            plan.latency_size, plan.latency_rate, plan.latency_seconds)}


def latency_probe(bootstrap: str, topic: str, broker_pid: int, size: int, rate: int,
                  seconds: float, producer_args: tuple[str, ...] = (), producers: int = 1
                  ) -> dict[str, Any]:
    """Start the consumer, wait until it is fetching, then run ``producers`` paced
    producer processes together (each at ``rate / producers``, with ``producer_args``
    such as ``--acks all``); ``producer`` holds the first one's figures (its window covers
    the broker's CPU), ``producer_rates`` every producer's achieved records/s,
    ``producer_request_rates`` its Produce requests/s (None where librdkafka reported no
    statistics)."""
    share = rate // producers
    common = ["--bootstrap", bootstrap, "--topic", topic, "--size", str(size)]
    consumer = start_client("bench.latency_client", [
        "consume", *common, "--count", str(int(share * seconds) * producers),
        "--max-seconds", str(seconds + 10)])
    started: list[subprocess.Popen[str]] = []
    try:
        assert consumer.stdout is not None
        if consumer.stdout.readline().strip() != READY:
            raise RuntimeError("latency consumer did not start: "
                               + consumer.communicate(timeout=5)[1].strip()[-500:])
        started = [start_client("bench.latency_client", [
            "produce", *common, "--rate", str(share), "--seconds", str(seconds),
            "--broker-pid", str(broker_pid), *producer_args]) for _ in range(producers)]
        figures = [finish_client(p, seconds + CLIENT_OVERHEAD_S) for p in started]
        received = finish_client(consumer, CLIENT_OVERHEAD_S)
    finally:
        for process in [consumer, *started]:
            if process.poll() is None:
                process.kill()
                process.communicate()
    return {"producer": figures[0], "producer_rates": [f["records_per_second"] for f in figures],
            "producer_request_rates": [f.get("requests_per_second") for f in figures],
            "consumer": received}


def busy_cores(sample_seconds: float = 2.0) -> float:
    """How many cores the machine kept busy over the next ``sample_seconds``."""
    before = machine_busy_seconds()
    time.sleep(sample_seconds)
    return (machine_busy_seconds() - before) / sample_seconds


def wait_until_quiet(max_seconds: float, threshold_cores: float = QUIET_CORES) -> float:
    """On a shared machine, wait (at most ``max_seconds``) until other work keeps fewer
    than ``threshold_cores`` cores busy; return the last reading."""
    deadline = time.monotonic() + max_seconds
    busy = busy_cores()
    while busy >= threshold_cores and time.monotonic() < deadline:
        print(f"waiting for a quieter machine: {busy:.2f} cores busy", file=sys.stderr)
        busy = busy_cores()
    return busy


def run_benchmark(plan: Plan) -> dict[str, Any]:
    results: dict[str, Any] = {
        "started_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ"),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg()[0],
        "plan": dataclasses.asdict(plan),
    }
    cluster = Cluster.start()
    try:
        cluster.create_topics(["bench-1024", "bench-100", "bench-latency"])
        results["throughput"] = throughput(cluster, plan, [
            ("1 KiB", 1024, plan.records_1k), ("100 B", 100, plan.records_100)])
        results["latency"] = guarded(lambda: latency(cluster, plan))
        results["rebalance"] = guarded(
            lambda: rebalance.run(cluster, rounds=plan.rebalance_rounds))
        produced_1k = results["throughput"]["produce 1 KiB"].get("records") or plan.records_1k
        results["ceiling"] = guarded(lambda: ceiling.measure(cluster.workdir, produced_1k * 1024))
        results["storage"] = guarded(
            lambda: storage_append.run(plan.storage_megabytes, cluster.workdir))
    finally:
        cluster.stop()
    return results


def run_profile(phase: str, plan: Plan, results_dir: Path = RESULTS_DIR, top: int = 30) -> str:
    """Profile the broker during one throughput phase; return its hottest functions (also
    written to ``results_dir/profile-<phase>.txt``, the raw profile beside it)."""
    size = 1024 if phase.endswith("1k") else 100
    count = plan.records_1k if size == 1024 else plan.records_100
    profile_path = results_dir / f"broker-{phase}.prof"
    results_dir.mkdir(parents=True, exist_ok=True)
    cluster = Cluster.start(profile_to=profile_path)
    try:
        cluster.create_topics([f"bench-{size}"])
        produced = produce(cluster, f"bench-{size}", size, count, plan)
        figures = [f"produce: {produced}"]
        if phase.startswith("consume"):
            figures.append(f"consume: {consume(cluster, f'bench-{size}', produced['records'], plan)}")
    finally:
        cluster.stop()
    report_path = results_dir / f"profile-{phase}.txt"
    with open(report_path, "w") as out:
        out.write("\n".join(figures) + "\n\n")
        stats = pstats.Stats(str(profile_path), stream=out)
        stats.sort_stats("tottime").print_stats(top)
        stats.sort_stats("cumulative").print_stats(top)
    return report_path.read_text()


def run_density(quick: bool) -> dict[str, Any]:
    """The density phases (imported here: :mod:`bench.density` builds on this module)."""
    from bench.density import DensityPlan, run

    return run(DensityPlan().quick() if quick else DensityPlan())


def render_density(results: dict[str, Any]) -> str:
    if "error" in results:
        return f"density phases: FAILED: {results['error']}"
    from bench.density_report import render as render_figures

    return render_figures(results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/run_all.py", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the work (smoke test)")
    parser.add_argument("--profile", choices=PROFILED_PHASES,
                        help="profile the broker in this phase instead of the full run")
    parser.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                        help="first wait up to SECONDS for other work to leave the CPUs idle")
    parser.add_argument("--skip-density", action="store_true",
                        help="leave out the density phases (bench/density.py)")
    args = parser.parse_args(argv)
    plan = Plan().quick() if args.quick else Plan()
    busy_before = wait_until_quiet(args.wait_quiet) if args.wait_quiet else None
    if args.profile:
        print(run_profile(args.profile, plan))
        return 0
    results = run_benchmark(plan)
    results["busy_cores_before"] = busy_before
    if not args.skip_density:
        results["density"] = guarded(partial(run_density, args.quick))
    write_json(results, RESULTS_DIR / "latest.json")
    print(render(results))
    if "density" in results:
        print(render_density(results["density"]))
    print(f"JSON: {RESULTS_DIR / 'latest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
