"""One tenant's acks=all latency while another creates (or deletes) a large topic on the same
brokers: ``python -m bench.creation_latency [--partitions 3000] [--rounds 2] [--delete]``.

Why: a broker creates a log for every replica of a new topic it hosts (three brokers
hosting an RF 3 topic of 3,000 partitions make 3,000 logs each), on the event loop that
also answers every other client.  How long that work holds the loop at a time, and the
garbage collections the burst of new objects causes, is what the other tenants' records
wait for.

Each round starts the test harness's three brokers on a private ZooKeeper, creates a
one-partition RF 3 topic (``min.insync.replicas=2``) led by broker 1, and sends 2,000
records/s of 1 KiB to it from one producer (acks=all, idempotence, ``linger.ms=0``: the
default client) for :data:`SEND_S` seconds.  At :data:`ACT_AT_S` an admin client
creates a topic of ``--partitions`` partitions (RF 3); with ``--delete`` that topic is
created before the producer starts (and every broker has made its logs: the cluster
reports a topic's leaders and full ISRs before its brokers have applied them), and
deleted then.  Printed per
round: the delivery latency (``produce()`` to delivery report) p50/p99/max of the records
sent before the creation or deletion (from :data:`WARM_UP_S`) and of those sent from it
on, when the admin request was acknowledged, and the garbage-collection pauses the
brokers logged (over 100 ms).
Figures are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.acks_all_cpu import three_brokers
from bench.latency_client import summarise

RATE = 2_000  # records/s
SEND_S = 16.0
WARM_UP_S = 1.0  # the producer's first records wait for its metadata and connections
ACT_AT_S = 5.0
WIDE_TOPIC = "tenant-b-wide"
GC_PAUSE = re.compile(r"garbage collection of generation (\d) paused every thread for (\d+) ms")


def one_round(partitions: int, action: str) -> dict[str, Any]:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    with three_brokers("creation-latency", None) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("tenant-a", 1, replica_assignment=[[1, 2, 3]],
                                      config={"min.insync.replicas": "2"})]
                            )["tenant-a"].result(60)
        if action == "delete":  # created, applied, then deleted while tenant-a sends
            cluster.create_topic(WIDE_TOPIC, partitions)
            _await_logs(cluster, WIDE_TOPIC, partitions)
        logged_before = {b.broker_id: len(b.output()) for b in cluster.brokers.values()}
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                             "linger.ms": 0, "enable.idempotence": True})
        delivered: list[tuple[float, float]] = []  # (sent at, latency), seconds
        acted: dict[str, float] = {}
        started = time.monotonic()

        def act() -> None:
            time.sleep(ACT_AT_S)
            if action == "delete":
                admin.delete_topics([WIDE_TOPIC])[WIDE_TOPIC].result(120)
            else:
                admin.create_topics([NewTopic(WIDE_TOPIC, partitions, 3)])[WIDE_TOPIC].result(120)
            acted["acknowledged_s"] = round(time.monotonic() - started - ACT_AT_S, 2)

        actor = threading.Thread(target=act)
        actor.start()
        for sent in range(int(RATE * SEND_S)):
            due = started + sent / RATE
            if (wait := due - time.monotonic()) > 0:
                time.sleep(wait)
            producer.produce("tenant-a", b"x" * 1024,
                             on_delivery=_recorder(delivered, started, time.monotonic()))
            producer.poll(0)
        if producer.flush(30):
            raise RuntimeError("records still undelivered 30 s after the last was sent")
        actor.join()
        pauses = [(int(generation), int(ms)) for b in cluster.brokers.values()
                  for generation, ms in GC_PAUSE.findall(b.output()[logged_before[b.broker_id]:])]
    return {**windows(delivered), "acknowledged_s": acted.get("acknowledged_s"),
            "gc_pauses_over_100_ms": pauses}


def _await_logs(cluster: Any, topic: str, partitions: int, timeout_s: float = 120.0) -> None:
    """Until every broker holds a log directory for each partition of ``topic``."""
    deadline = time.monotonic() + timeout_s
    while any(sum(1 for _ in b.log_dir.glob(f"{topic}-*[0-9]")) < partitions
              for b in cluster.brokers.values()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the brokers made no logs for all of {topic} in {timeout_s} s")
        time.sleep(0.2)


def _recorder(delivered: list[tuple[float, float]], started: float, sent: float
              ) -> Callable[[Any, Any], None]:
    """A delivery callback appending (sent at, latency) of a record sent at ``sent``."""
    def on_delivery(error: Any, _message: Any) -> None:
        if error is None:
            delivered.append((sent - started, time.monotonic() - sent))
    return on_delivery


def windows(delivered: list[tuple[float, float]]) -> dict[str, dict[str, Any]]:
    """The figures of the records sent before the admin request (after the warm-up) and of
    those sent from it on."""
    return {"alone": summarise([lat * 1000 for at, lat in delivered
                                if WARM_UP_S <= at < ACT_AT_S]),
            "during": summarise([lat * 1000 for at, lat in delivered if at >= ACT_AT_S])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.creation_latency",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=3_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--delete", action="store_true",
                        help="create the topic first, in sync, and delete it instead")
    args = parser.parse_args(argv)
    action = "delete" if args.delete else "create"
    for _ in range(args.rounds):
        print(json.dumps({"partitions": args.partitions, "action": action,
                          **one_round(args.partitions, action)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
