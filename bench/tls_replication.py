"""What encrypting (and authenticating) replication costs: acks=all produce throughput on a
three-broker RF=3 partition whose followers fetch over PLAINTEXT, SSL or SASL_SSL
(SCRAM-SHA-512), and the CPU all three brokers spend per produced MB, each as a ratio to
PLAINTEXT.  ``python bench/tls_replication.py [--quick] [--rounds N]``; writes
``bench/results/tls_replication.json``.  Figures, not assertions.

Clients produce over the PLAINTEXT listener in every phase, so the difference is the
followers' TLS (and, once per connection, the SASL login); the leader is broker 1 in each
cluster.  Each phase starts its own cluster on one ZooKeeper (separate chroots); the modes
alternate round by round and the medians are reported, because on a shared machine one
phase's throughput swings with the neighbours' load.  CPU per MB is the steadier figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kazoo.client import KazooClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import process_cpu_seconds  # noqa: E402
from bench.run_all import CLIENT_OVERHEAD_S, RESULTS_DIR, run_client  # noqa: E402
from tests.integration.cluster.harness import with_timeout_kill  # noqa: E402
from tests.integration.secure.secure_cluster import (  # noqa: E402
    BROKER_PASSWORD,
    BROKER_USER,
    SecureCluster,
    make_certs,
    secure_properties,
    write_scram_user,
)
from tests.support.services import start_zookeeper  # noqa: E402

RECORD_BYTES = 1024
MODES = ("PLAINTEXT", "SSL", "SASL_SSL")


def phase(zk_address: str, workdir: Path, certs: Path, mode: str, records: int,
          seconds: float, chroot: str) -> dict[str, Any]:
    zk = KazooClient(hosts=zk_address + chroot)
    zk.start()
    try:
        write_scram_user(zk, BROKER_USER, BROKER_PASSWORD)
    finally:
        zk.stop()
    listener = "SASL_SSL" if mode == "PLAINTEXT" else mode  # PLAINTEXT: TLS unused
    props = secure_properties(certs, listener)
    if mode == "PLAINTEXT":
        props = {k: v for k, v in props.items() if not k.startswith(("inter.", "sasl.",
                                                                       "listener."))}
    cluster = SecureCluster(zk_address + chroot, workdir, properties=props, listener=listener)
    try:
        cluster.start()
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("rf3", 1, replica_assignment=[[1, 2, 3]],
                                      config={"min.insync.replicas": "2"})])["rf3"].result(60)
        cluster.await_full_isr("rf3", timeout_s=60)
        leader = cluster.brokers[1].process
        assert leader is not None
        pids = [p.process.pid for p in cluster.brokers.values() if p.process is not None]
        cpu_before = sum(process_cpu_seconds(pid) for pid in pids)
        figures = run_client("bench.throughput_client", [
            "produce", "--bootstrap", cluster.brokers[1].bootstrap, "--topic", "rf3",
            "--size", str(RECORD_BYTES), "--count", str(records), "--max-seconds", str(seconds),
            "--broker-pid", str(leader.pid), "--acks", "all"], seconds + CLIENT_OVERHEAD_S)
        cpu = sum(process_cpu_seconds(pid) for pid in pids) - cpu_before
        megabytes = (figures.get("mb_per_second") or 0) * (figures.get("seconds") or 0)
        figures["cluster_cpu_ms_per_mb"] = round(cpu * 1000 / megabytes, 2) if megabytes else None
        return figures
    finally:
        for process in cluster.brokers.values():
            if process.process is not None and process.process.poll() is None:
                with_timeout_kill(process)


def median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 3) if present else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/tls_replication.py")
    parser.add_argument("--quick", action="store_true", help="a tenth of the work, one round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    args = parser.parse_args(argv)
    records, seconds = (50_000, 5.0) if args.quick else (300_000, 15.0)
    rounds = 1 if args.quick else args.rounds
    zookeeper = start_zookeeper()
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-tls-replication-") as workdir:
            certs = make_certs(Path(workdir) / "certs")
            for round_number in range(rounds):
                for mode in MODES:
                    name = f"{mode.lower()}-{round_number}"
                    (Path(workdir) / name).mkdir()
                    runs[mode].append(phase(zookeeper.address, Path(workdir) / name, certs, mode,
                                            records, seconds, f"/tls-{name}"))
    finally:
        zookeeper.stop()
    summary: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        summary[mode] = {
            "mb_per_second": median([r.get("mb_per_second") for r in runs[mode]]),
            "cluster_cpu_ms_per_mb": median([r.get("cluster_cpu_ms_per_mb") for r in runs[mode]]),
            "failed": sum(r.get("failed") or 0 for r in runs[mode]),
            "rounds": len(runs[mode])}
    base = summary["PLAINTEXT"]
    for mode in MODES:
        figures = summary[mode]
        for key in ("mb_per_second", "cluster_cpu_ms_per_mb"):
            figures[f"{key}_ratio"] = (round(figures[key] / base[key], 3)
                                       if figures[key] and base[key] else None)
        print(f"{mode:>10}: {figures['mb_per_second']} MB/s (x{figures['mb_per_second_ratio']}), "
              f"{figures['cluster_cpu_ms_per_mb']} broker CPU ms/MB "
              f"(x{figures['cluster_cpu_ms_per_mb_ratio']}), failed {figures['failed']}, "
              f"median of {figures['rounds']}")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "tls_replication.json").write_text(
        json.dumps({"summary": summary, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
