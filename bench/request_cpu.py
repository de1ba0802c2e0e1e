"""Broker CPU per request, one request at a time: ``python -m bench.request_cpu
[--requests N]``.

Why this figure: at ``linger.ms=0`` every record is a request, and an acks=all record on
RF 3 costs its leader four requests and four responses (the produce, two followers'
fetches, the consumer's fetch).  What one request costs before any API's own work (the
event loop's wake-up, reading and splitting the frame, dispatch, encoding, the socket
write that wakes the peer) bounds how many of them the leader's one Python process can
answer.  So this measures requests that do almost nothing next to ones that read a
record, each sent by a blocking client on loopback and answered before the next, against
broker 1 of the test harness's three-broker cluster:

* ``metadata``: Metadata v9 naming no topic (the brokers only);
* ``fetch-empty``: Fetch v12 at the log end with ``max_wait_ms`` 0 (an empty answer);
* ``fetch-record``: Fetch v12 of the partition's one 1 KiB record;
* ``api-versions``: ApiVersions v3 (its answer lists every API);
* ``metadata-1000``: Metadata v9 naming one topic of 1,000 partitions (what every client
  asks again after a failover; the partitions' answer is kept per topic state).

Prints one JSON line: microseconds of broker CPU (user + system, ``/proc``) and of wall
time per request, for each kind.  One at a time means every request pays a wake-up; under
load they share them, so these are upper bounds of the per-request cost.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from bench.acks_all_cpu import three_brokers
from bench.measure import process_cpu_seconds
from brokerd.protocol import ApiKey

TOPIC = "request-cpu"
WIDE_TOPIC, WIDE_PARTITIONS = "request-cpu-wide", 1_000
WARM_UP_REQUESTS = 200
FETCH_VERSION = 12  # the last version naming topics, as the followers send
PARTITION_MAX_BYTES = 1 << 20


def fetch_body(offset: int) -> dict[str, Any]:
    """A consumer's sessionless fetch of partition 0 from ``offset``, answered at once."""
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1,
            "max_bytes": PARTITION_MAX_BYTES, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": TOPIC, "partitions": [{
                "partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": PARTITION_MAX_BYTES}]}],
            "forgotten_topics_data": [], "rack_id": ""}


REQUESTS: dict[str, tuple[ApiKey, int, dict[str, Any]]] = {
    "metadata": (ApiKey.METADATA, 9, {
        "topics": [], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False}),
    "fetch-empty": (ApiKey.FETCH, FETCH_VERSION, fetch_body(1)),
    "fetch-record": (ApiKey.FETCH, FETCH_VERSION, fetch_body(0)),
    "api-versions": (ApiKey.API_VERSIONS, 3, {
        "client_software_name": "bench", "client_software_version": "1"}),
    "metadata-1000": (ApiKey.METADATA, 9, {
        "topics": [{"name": WIDE_TOPIC}], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False}),
}


def measure(requests: int) -> dict[str, Any]:
    from confluent_kafka import Producer

    from tests.integration.brokerd.broker_process import WireClient

    results: dict[str, Any] = {}
    with three_brokers("request-cpu", None) as cluster:
        cluster.create_topic(TOPIC, 1, 1)
        cluster.create_topic(WIDE_TOPIC, WIDE_PARTITIONS, 1)
        producer = Producer({"bootstrap.servers": cluster.bootstrap})
        producer.produce(TOPIC, b"x" * 1024, partition=0)
        if producer.flush(10):
            raise RuntimeError("the record to fetch was not acknowledged")
        leader = cluster.brokers[cluster.leader(TOPIC)]
        assert leader.process is not None
        client = WireClient(leader.port)
        try:
            for name, (api_key, version, body) in REQUESTS.items():
                for _ in range(WARM_UP_REQUESTS):
                    client.request(api_key, version, body)
                cpu_before = process_cpu_seconds(leader.process.pid)
                wall_before = time.perf_counter()
                for _ in range(requests):
                    client.request(api_key, version, body)
                wall = time.perf_counter() - wall_before
                cpu = process_cpu_seconds(leader.process.pid) - cpu_before
                results[name] = {"broker_cpu_us": round(cpu / requests * 1e6, 1),
                                 "wall_us": round(wall / requests * 1e6, 1)}
        finally:
            client.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.request_cpu",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5_000, help="per kind")
    args = parser.parse_args(argv)
    print(json.dumps({"requests": args.requests, **measure(args.requests)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
