"""Noisy neighbour: does one tenant pushing 3x its produce quota hurt another tenant?
``python -m bench.noisy_neighbour [--quota-mb 2] [--seconds 6]``.

One private ZooKeeper and one broker (PLAINTEXT for the operator, SASL_PLAINTEXT for the
tenants).  Tenant ``noisy``'s plan sets ``producer_byte_rate``; tenant ``quiet`` has no
quota.  Each logs in with its own SCRAM-SHA-512 API key and writes its own topic.

One run alternates ``--rounds`` pairs of *quiet alone* and *quiet beside noisy* (noisy
offers 3x its quota from a separate process, so its client never competes with quiet's for
a GIL), swapping the order every round so drift (a filling page cache, other load on the
machine) hits both cases alike.  Each quiet phase measures, one after the other:

* latency: one producer sending 2 000 x 1 KiB values/s for ``--seconds`` with linger.ms=0;
  produce() to delivery report per record, p50 and p99;
* throughput: one producer pushing 1 KiB values as fast as it can for ``--seconds``
  (acks=1, linger.ms=5, 1 MB batches); MB/s of acknowledged payload.

Each case's figure is the median over its rounds.  Criteria from issue 7: beside noisy,
quiet keeps >= 90 % of its throughput, and of its p99 latency (alone p99 / beside p99).
Noisy's accepted rate is read from the broker's Prometheus counter: it should sit at its
quota while its client offers three times as much.  Figures are reported, never asserted.
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Producer
from kazoo.client import KazooClient

from bench.measure import percentile
from tenants import credentials, znodes
from tenants import zookeeper as control_plane
from tests.integration.brokerd.quota_support import (
    MB,
    PushStats,
    counter,
    create_topic,
    producer,
    push,
)
from tests.support.services import REPO_ROOT, free_port, start_zookeeper, wait_for_port

VALUE_BYTES = 1024
LATENCY_RATE = 2_000  # records/s of the latency probe
THROUGHPUT_CONFIG: dict[str, Any] = {"acks": 1, "linger.ms": 5, "compression.type": "none",
                                     "batch.size": 1_000_000,
                                     "queue.buffering.max.kbytes": 65536}
LATENCY_CONFIG: dict[str, Any] = {"acks": 1, "linger.ms": 0, "compression.type": "none"}
ALONE, BESIDE = "quiet alone", "quiet beside noisy"
# Before each case: noisy gets past its cold-start window (so it runs at its quota), and the
# alone case waits as long, so both start after the same write-back pause.
PAUSE_S = 2.0


@dataclass
class Tenant:
    slug: str
    key: str
    secret: str

    def client_config(self, sasl_port: int) -> dict[str, Any]:
        return {"bootstrap.servers": f"127.0.0.1:{sasl_port}",
                "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-512",
                "sasl.username": self.key, "sasl.password": self.secret}


@dataclass
class QuietFigures:
    mb_per_s: float
    p50_ms: float
    p99_ms: float


def provision(zk: KazooClient, slug: str, quota_defaults: dict[str, str]) -> Tenant:
    """A tenant as the control plane publishes it: plan, one API key, ACLs on its topics."""
    tenant = Tenant(slug, credentials.new_key(), credentials.new_secret())
    control_plane.put(zk, znodes.tenant_znode(slug), znodes.tenant_payload(
        name=slug, plan="bench", status="active", quota_defaults=quota_defaults,
        max_partitions=10))
    control_plane.put_config(zk, znodes.entity_path(tenant.key, None), znodes.api_key_config(
        scram_sha_256=credentials.scram_credential(tenant.secret, "SCRAM-SHA-256"),
        scram_sha_512=credentials.scram_credential(tenant.secret, "SCRAM-SHA-512"),
        principal=f"{slug}.app", tenant=slug))
    control_plane.put(zk, znodes.acl_znode("prefixed", "Topic", f"{slug}."),
                      znodes.acl_payload([(f"{slug}.app", "All")]))
    return tenant


def quiet_throughput(config: dict[str, Any], seconds: float) -> float:
    """MB/s of acknowledged payload, pushing as fast as one producer can."""
    stats = PushStats()
    client = Producer({**config, **THROUGHPUT_CONFIG})
    started = time.monotonic()
    push(client, "events", seconds, stats, value_bytes=VALUE_BYTES)
    if stats.errors:
        raise RuntimeError(f"quiet producer saw errors: {stats.errors[:3]}")
    return stats.delivered_bytes / (time.monotonic() - started) / MB


def quiet_latency(config: dict[str, Any], seconds: float) -> tuple[float, float]:
    """p50 and p99 ms from produce() to delivery report at a paced rate."""
    client = Producer({**config, **LATENCY_CONFIG})
    latencies: list[float] = []
    value = b"x" * VALUE_BYTES

    def delivered(error: KafkaError | None, _message: Any, sent: float) -> None:
        if error is None:
            latencies.append(time.perf_counter() - sent)

    started = time.perf_counter()
    sent = 0
    while (now := time.perf_counter()) - started < seconds:
        if sent < (now - started) * LATENCY_RATE:
            client.produce("events", value, on_delivery=functools.partial(delivered, sent=now))
            sent += 1
        else:
            client.poll(0.0005)
    client.flush(30)
    ordered = sorted(latencies)
    return percentile(ordered, 0.50) * 1000, percentile(ordered, 0.99) * 1000


def measure_quiet(config: dict[str, Any], seconds: float) -> QuietFigures:
    # Latency first: the throughput phase leaves hundreds of MB of dirty pages whose
    # write-back would otherwise land in the latency phase of the same case.
    p50, p99 = quiet_latency(config, seconds)
    mb_per_s = quiet_throughput(config, seconds)
    return QuietFigures(mb_per_s, p50, p99)


def noisy_client(config: dict[str, Any], offered: float, seconds: float,
                 results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    """Offer ``offered`` bytes/s for ``seconds`` (runs in its own process)."""
    stats = PushStats()
    client = producer(config["bootstrap.servers"], "noisy-app", stats,
                      {**config, "batch.size": 65536})
    push(client, "events", seconds, stats, value_bytes=VALUE_BYTES, rate=offered)
    results.put((stats.delivered_bytes, stats.throttle_events, len(stats.errors)))


def beside_noisy(quiet_config: dict[str, Any], noisy_config: dict[str, Any], quota: int,
                 seconds: float, metrics_port: int) -> tuple[QuietFigures, float]:
    """Quiet's figures while noisy offers 3x its quota, and noisy's rate at the broker."""
    results: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    noisy_s = PAUSE_S + 2 * seconds + 1
    noisy_process = multiprocessing.Process(target=noisy_client, args=(
        noisy_config, 3 * quota, noisy_s, results))
    noisy_process.start()
    time.sleep(PAUSE_S)
    before = counter(metrics_port, "kafka_server_bytes_in_total", topic="noisy.events")
    measured_from = time.monotonic()
    figures = measure_quiet(quiet_config, seconds)
    noisy_rate = (counter(metrics_port, "kafka_server_bytes_in_total", topic="noisy.events")
                  - before) / (time.monotonic() - measured_from)
    _, _, errors = results.get(timeout=noisy_s + 60)
    noisy_process.join()
    if errors:
        raise RuntimeError(f"noisy producer saw {errors} errors (a quota must never error)")
    return figures, noisy_rate


def median_figures(runs: list[QuietFigures]) -> QuietFigures:
    return QuietFigures(statistics.median(r.mb_per_s for r in runs),
                        statistics.median(r.p50_ms for r in runs),
                        statistics.median(r.p99_ms for r in runs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quota-mb", type=float, default=2.0,
                        help="noisy tenant's producer_byte_rate, MB/s (10^6 bytes)")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each measurement")
    parser.add_argument("--rounds", type=int, default=3, help="alone/beside pairs")
    args = parser.parse_args()
    quota = int(args.quota_mb * MB)
    workdir = Path(tempfile.mkdtemp(prefix="bench-noisy-"))
    zookeeper = start_zookeeper()
    broker: subprocess.Popen[bytes] | None = None
    try:
        connect = f"{zookeeper.address}/bench-noisy"
        zk = control_plane.client(connect)  # creates the chroot, as the control plane does
        noisy = provision(zk, "noisy", {"producer_byte_rate": str(quota)})
        quiet = provision(zk, "quiet", {})
        plain_port, sasl_port, metrics_port = free_port(), free_port(), free_port()
        output = open(workdir / "broker.out", "wb")  # noqa: SIM115 - owned by the process
        broker = subprocess.Popen(
            [sys.executable, "-m", "brokerd", "serve", "--broker-id", "1", "--listeners",
             f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
             "--zookeeper", connect, "--log-dirs", str(workdir / "logs"),
             "--metrics-port", str(metrics_port)],
            cwd=REPO_ROOT, stdout=output, stderr=subprocess.STDOUT)
        output.close()
        wait_for_port(sasl_port, 30, broker)
        for slug in ("noisy", "quiet"):
            create_topic(zk, f"{slug}.events", [1], [f"127.0.0.1:{plain_port}"])
        time.sleep(0.5)  # credentials and ACLs reach the broker through its watches
        quiet_config = quiet.client_config(sasl_port)

        quiet_throughput(quiet_config, 2.0)  # warm-up: connections, log, page cache
        figures: dict[str, list[QuietFigures]] = {ALONE: [], BESIDE: []}
        noisy_rates: list[float] = []
        for round_number in range(args.rounds):
            # Alternate the order: drift (page cache, other load) then hits both cases.
            for case in (ALONE, BESIDE) if round_number % 2 == 0 else (BESIDE, ALONE):
                if case == ALONE:
                    time.sleep(PAUSE_S)  # the same pause the noisy case spends warming up
                    figures[case].append(measure_quiet(quiet_config, args.seconds))
                else:
                    measured, noisy_rate = beside_noisy(
                        quiet_config, noisy.client_config(sasl_port), quota, args.seconds,
                        metrics_port)
                    figures[case].append(measured)
                    noisy_rates.append(noisy_rate)
                print_quiet(f"round {round_number + 1} {case}", figures[case][-1])
        alone, beside = (median_figures(figures[ALONE]), median_figures(figures[BESIDE]))
        throughput_kept = beside.mb_per_s / alone.mb_per_s
        latency_kept = alone.p99_ms / beside.p99_ms
        print_quiet(f"median {ALONE}", alone)
        print_quiet(f"median {BESIDE}", beside)
        print(f"noisy: quota {quota / MB:.2f} MB/s, offered {3 * quota / MB:.2f} MB/s, "
              f"accepted at the broker " + ", ".join(f"{rate / MB:.2f}" for rate in noisy_rates)
              + " MB/s while quiet was measured")
        print(f"quiet throughput kept: {throughput_kept:.1%} "
              f"({'met' if throughput_kept >= 0.9 else 'MISSED'} >= 90%)")
        print(f"quiet p99 latency kept: {latency_kept:.1%} "
              f"(p99 {beside.p99_ms:.2f} ms beside vs {alone.p99_ms:.2f} ms alone; "
              f"{'met' if latency_kept >= 0.9 else 'MISSED'} >= 90%)")
        control_plane.close_all()
        return 0
    finally:
        if broker is not None and broker.poll() is None:
            broker.send_signal(signal.SIGTERM)
            broker.wait(20)
        zookeeper.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def print_quiet(label: str, figures: QuietFigures) -> None:
    print(f"{label:20s} {figures.mb_per_s:7.1f} MB/s   latency p50 {figures.p50_ms:6.2f} ms  "
          f"p99 {figures.p99_ms:6.2f} ms", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
