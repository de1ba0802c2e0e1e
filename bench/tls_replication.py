"""What encrypting (and authenticating) replication costs: acks=all produce throughput on a
three-broker RF=3 partition whose followers fetch over PLAINTEXT, SSL or SASL_SSL
(SCRAM-SHA-512), each printed as a ratio to PLAINTEXT.  ``python bench/tls_replication.py
[--quick]``; writes ``bench/results/tls_replication.json``.  Figures, not assertions.

Clients produce over the PLAINTEXT listener in every phase, so the difference is the
followers' TLS (and, once per connection, the SASL login); the leader is broker 1 in each
cluster.  Each phase starts its own cluster on one ZooKeeper (separate chroots).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kazoo.client import KazooClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

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
          seconds: float) -> dict[str, Any]:
    chroot = f"/tls-{mode.lower()}"
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
        return run_client("bench.throughput_client", [
            "produce", "--bootstrap", cluster.brokers[1].bootstrap, "--topic", "rf3",
            "--size", str(RECORD_BYTES), "--count", str(records), "--max-seconds", str(seconds),
            "--broker-pid", str(leader.pid), "--acks", "all"], seconds + CLIENT_OVERHEAD_S)
    finally:
        for process in cluster.brokers.values():
            if process.process is not None and process.process.poll() is None:
                with_timeout_kill(process)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/tls_replication.py")
    parser.add_argument("--quick", action="store_true", help="a tenth of the work")
    args = parser.parse_args(argv)
    records, seconds = (50_000, 5.0) if args.quick else (300_000, 15.0)
    zookeeper = start_zookeeper()
    results: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-tls-replication-") as workdir:
            certs = make_certs(Path(workdir) / "certs")
            for mode in MODES:
                (Path(workdir) / mode).mkdir()
                results[mode] = phase(zookeeper.address, Path(workdir) / mode, certs, mode,
                                      records, seconds)
    finally:
        zookeeper.stop()
    base = results["PLAINTEXT"].get("mb_per_second")
    for mode in MODES:
        figures = results[mode]
        rate = figures.get("mb_per_second")
        figures["ratio_to_plaintext"] = round(rate / base, 3) if rate and base else None
        print(f"{mode:>10}: {rate} MB/s, {figures.get('records_per_second')} rec/s, "
              f"leader CPU {figures.get('broker_cpu_share')}, failed {figures.get('failed')}, "
              f"ratio to PLAINTEXT {figures['ratio_to_plaintext']}")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "tls_replication.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
