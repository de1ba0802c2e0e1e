"""Produce throughput over SASL_SSL (SCRAM-SHA-512, TLS, a tenant principal with ACLs and
name mapping) against PLAINTEXT (the operator, no TLS, no guard), in one run:
``python -m bench.sasl_overhead [--seconds 4] [--rounds 5]``.  SASL_PLAINTEXT (the same
tenant without TLS) is measured too, splitting the cost into tenancy and TLS.

One private ZooKeeper and one broker with both listeners.  Each round measures both cases
back to back, in alternating order (the broker slows down as its page cache fills with
gigabytes of log, so whichever ran first would otherwise look faster), and yields one
ratio; the printed figure is the median ratio over ``--rounds``.  A case produces 1 KiB
values with confluent-kafka for ``--seconds`` after a warm-up (acks=1, linger.ms=5, no
compression) and counts acknowledged payload bytes.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from tenants import credentials, znodes
from tenants import zookeeper as control_plane
from tests.support.services import REPO_ROOT, free_port, start_zookeeper, wait_for_port

VALUE = b"x" * 1024
PRODUCER_CONFIG: dict[str, Any] = {"acks": 1, "linger.ms": 5, "compression.type": "none",
                                   "batch.size": 1_000_000,
                                   "queue.buffering.max.kbytes": 1_000_000}


def produce_rate(config: dict[str, Any], topic: str, seconds: float) -> float:
    """MB/s of acknowledged payload over ``seconds`` (after one acknowledged warm-up)."""
    producer = Producer({**PRODUCER_CONFIG, **config})
    producer.produce(topic, VALUE)
    if producer.flush(30) != 0:
        raise RuntimeError(f"warm-up produce to {topic} was not acknowledged")
    acknowledged = [0]

    def delivered(err: object, message: object) -> None:
        if err is None:
            acknowledged[0] += len(VALUE)

    started = time.monotonic()
    while time.monotonic() - started < seconds:
        try:
            producer.produce(topic, VALUE, on_delivery=delivered)
        except BufferError:
            producer.poll(0.005)
        producer.poll(0)
    producer.flush(30)
    return acknowledged[0] / (time.monotonic() - started) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-sasl-"))
    zookeeper = start_zookeeper()
    broker: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run([str(REPO_ROOT / "scripts" / "certs.sh"), str(workdir / "certs")],
                       check=True, capture_output=True)
        connect = f"{zookeeper.address}/bench-sasl"
        zk = control_plane.client(connect)  # creates the chroot, as the control plane does
        key, secret = credentials.new_key(), credentials.new_secret()
        control_plane.put(zk, znodes.tenant_znode("bench"), znodes.tenant_payload(
            name="bench", plan="bench", status="active", quota_defaults={},
            max_partitions=100))
        control_plane.put_config(zk, znodes.entity_path(key, None), znodes.api_key_config(
            scram_sha_256=credentials.scram_credential(secret, "SCRAM-SHA-256"),
            scram_sha_512=credentials.scram_credential(secret, "SCRAM-SHA-512"),
            principal="bench.producer", tenant="bench"))
        control_plane.put(zk, znodes.acl_znode("prefixed", "Topic", "bench."),
                          znodes.acl_payload([("bench.producer", "All")]))
        control_plane.close_all()
        plain_port, sasl_port, sasl_ssl_port = free_port(), free_port(), free_port()
        (workdir / "broker.properties").write_text(
            f"ssl.keystore.location={workdir / 'certs' / 'broker.pem'}\n")
        output = open(workdir / "broker.out", "wb")  # noqa: SIM115 - owned by the process
        broker = subprocess.Popen(
            [sys.executable, "-m", "brokerd", "serve", "--broker-id", "1", "--listeners",
             f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port},"
             f"SASL_SSL://127.0.0.1:{sasl_ssl_port}",
             "--zookeeper", connect, "--log-dirs", str(workdir / "logs"),
             "--config", str(workdir / "broker.properties")],
            cwd=REPO_ROOT, stdout=output, stderr=subprocess.STDOUT)
        output.close()
        wait_for_port(sasl_ssl_port, 30, broker)
        scram = {"sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": key,
                 "sasl.password": secret}
        cases = {
            "PLAINTEXT": ({"bootstrap.servers": f"127.0.0.1:{plain_port}"}, "bench.plain"),
            "SASL_PLAINTEXT": ({"bootstrap.servers": f"127.0.0.1:{sasl_port}",
                                "security.protocol": "SASL_PLAINTEXT", **scram}, "clear"),
            "SASL_SSL": ({"bootstrap.servers": f"127.0.0.1:{sasl_ssl_port}",
                          "security.protocol": "SASL_SSL",
                          "ssl.ca.location": str(workdir / "certs" / "ca.pem"), **scram},
                         "secure"),  # stored as bench.secure
        }
        ratios: list[float] = []
        clear_ratios: list[float] = []
        for round_number in range(1, args.rounds + 1):
            order = list(cases) if round_number % 2 else list(reversed(cases))
            rates = {name: produce_rate(*cases[name], args.seconds) for name in order}
            ratios.append(rates["SASL_SSL"] / rates["PLAINTEXT"])
            clear_ratios.append(rates["SASL_PLAINTEXT"] / rates["PLAINTEXT"])
            print(f"round {round_number}: " + ", ".join(
                f"{name} {rate:7.1f} MB/s" for name, rate in rates.items())
                + f"; SASL_SSL/PLAINTEXT {ratios[-1]:.2f}", flush=True)
        ratio = statistics.median(ratios)
        print(f"SASL_PLAINTEXT/PLAINTEXT = {statistics.median(clear_ratios):.2f} (tenancy, "
              f"median)")
        print(f"SASL_SSL/PLAINTEXT produce throughput = {ratio:.2f} (median of "
              f"{len(ratios)} rounds; {(1 - ratio) * 100:.0f}% cost)")
        return 0
    finally:
        if broker is not None and broker.poll() is None:
            broker.send_signal(signal.SIGTERM)
            broker.wait(20)
        zookeeper.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
