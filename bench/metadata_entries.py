"""A large topic's Metadata partitions, built and encoded after part of it changed:
``python -m bench.metadata_entries [--partitions N] [--changed N] [--rounds N]``.

Why this figure: a failover writes a large topic's partition states a few hundred at a
time, and clients ask Metadata again after every leadership error, so the broker answers
many states of the same topic in a row.  Pure CPU, no broker: each round changes
``--changed`` partitions' states and times :func:`partition_entries` plus encoding the
answer (Metadata v9), once built from nothing (``fresh``) and once handing the previous
state's elements on (``handed_on``, what the broker does).  Prints one JSON line with the
median milliseconds of each.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from typing import Any

from brokerd.coordination.znodes import PartitionState, TopicMetadata
from brokerd.protocol import ApiKey, RequestHeader, encode_response
from brokerd.server.handlers.metadata import PartitionEntries, partition_entries

LIVE = frozenset({1, 2, 3})
TOPIC_ID = uuid.UUID(int=1)


def _encode(entries: PartitionEntries) -> None:
    encode_response(RequestHeader(ApiKey.METADATA, 9, 1, None), {
        "throttle_time_ms": 0, "brokers": [], "cluster_id": "bench", "controller_id": 1,
        "topics": [{"error_code": 0, "name": "wide", "topic_id": TOPIC_ID,
                    "is_internal": False, "partitions": entries}]})


def _timed(metadata: TopicMetadata, previous: PartitionEntries | None
           ) -> tuple[PartitionEntries, float]:
    started = time.perf_counter()
    entries = partition_entries(metadata, frozenset(metadata.replicas), LIVE, previous)
    _encode(entries)
    return entries, (time.perf_counter() - started) * 1000


def measure(partitions: int, changed: int, rounds: int) -> dict[str, Any]:
    replicas: dict[int, tuple[int, ...]] = {
        p: (1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3) for p in range(partitions)}
    states = {p: PartitionState(r[0], 1, r) for p, r in replicas.items()}
    metadata = TopicMetadata("wide", TOPIC_ID, replicas, states)
    previous, _ = _timed(metadata, None)
    fresh, handed_on = [], []
    for round_ in range(rounds):
        start = round_ * changed % partitions
        moved = {p % partitions: PartitionState(replicas[p % partitions][1], 2 + round_,
                                                replicas[p % partitions][1:])
                 for p in range(start, start + changed)}
        metadata = TopicMetadata("wide", TOPIC_ID, replicas, {**metadata.states, **moved})
        fresh.append(_timed(metadata, None)[1])
        previous, elapsed = _timed(metadata, previous)
        handed_on.append(elapsed)
    return {"partitions": partitions, "changed_per_round": changed, "rounds": rounds,
            "fresh_ms": round(statistics.median(fresh), 2),
            "handed_on_ms": round(statistics.median(handed_on), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.metadata_entries")
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--changed", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    print(json.dumps(measure(args.partitions, args.changed, args.rounds)))


if __name__ == "__main__":
    main()
