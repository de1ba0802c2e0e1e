"""How the failover measurement polls the survivors (:func:`bench.failover.wait_for_topics`)."""

from __future__ import annotations

import time
from typing import cast

from bench.failover import wait_for_topics
from brokerd.protocol import ApiKey, RequestHeader, decode_response, encode_response
from tests.integration.cluster.harness import Cluster
from tests.integration.cluster.leaders import METADATA_VERSION, read_leaders

SLOW_ANSWER_S = 1.0
FAST_SETTLES_AFTER_S = 0.3


class TwoBrokers:
    """Broker 1 answers each Metadata request after a second and holds from 1.5 s on;
    broker 3 answers at once and holds from 0.3 s on."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def leaders(self, via: int, names: list[str]) -> dict[str, dict[int, int]]:
        elapsed = time.monotonic() - self.started
        if via == 1:
            time.sleep(SLOW_ANSWER_S)
        held = elapsed >= (1.5 if via == 1 else FAST_SETTLES_AFTER_S)
        return {name: {0: via if held else -1} for name in names}


def test_a_broker_is_seen_settled_without_waiting_for_a_slower_one() -> None:
    cluster = TwoBrokers()
    settled_by: dict[int, float] = {}

    def holds(_name: str, leaders: dict[int, int]) -> bool:
        return all(leader != -1 for leader in leaders.values())
    last = wait_for_topics(cast(Cluster, cluster), [1, 3], {"t": 1}, holds, 30, "leaders",
                           settled_by)
    # Polled in rounds, broker 3 was asked again only once broker 1's first (one-second)
    # answer had arrived.
    assert settled_by[3] - cluster.started < FAST_SETTLES_AFTER_S + SLOW_ANSWER_S / 2
    assert last == settled_by[1] > settled_by[3]


class ManyTopics:
    """One broker whose every Metadata request takes :data:`SLOW_ANSWER_S`; each topic
    holds from ``holds_after_s`` on.  Records the topics of every request."""

    def __init__(self, holds_after_s: float) -> None:
        self.started = time.monotonic()
        self.holds_after_s = holds_after_s
        self.requests: list[tuple[float, list[str]]] = []

    def leaders(self, via: int, names: list[str]) -> dict[str, dict[int, int]]:
        asked = time.monotonic() - self.started
        self.requests.append((asked, list(names)))
        time.sleep(SLOW_ANSWER_S)
        held = asked >= self.holds_after_s
        return {name: dict.fromkeys(range(1000), via if held else -1) for name in names}


def test_once_the_first_request_holds_the_remaining_topics_are_asked_for_at_once() -> None:
    """24 topics of 1,000 partitions are eight requests: asked one after another they
    would be seen settled only after eight one-second answers (~10.5 s: polls at 0,
    1.25 and 2.5 s, then seven more); at once, after two (~4.5 s)."""
    cluster = ManyTopics(holds_after_s=1.5)
    counts = {f"scale-{i}": 1000 for i in range(24)}

    def holds(_name: str, leaders: dict[int, int]) -> bool:
        return all(leader != -1 for leader in leaders.values())
    last = wait_for_topics(cast(Cluster, cluster), [1], counts, holds, 30, "leaders")

    before = [names for asked, names in cluster.requests if asked < 1.5]
    assert before and all(names == ["scale-0", "scale-1", "scale-2"] for names in before)
    after = [name for asked, names in cluster.requests if asked >= 1.5 for name in names]
    assert sorted(after) == sorted(counts)  # each asked once, after it held
    assert last - cluster.started < 7.0


def test_leaders_are_read_from_a_metadata_answer_as_the_codec_decodes_it() -> None:
    """The cheap reader and the codec agree on an answer with every kind of field the
    reader skips: brokers with and without a rack, a null cluster id, an error topic."""
    partitions = [{"error_code": 0, "partition_index": p, "leader_id": leader,
                   "replica_nodes": list(replicas), "isr_nodes": list(replicas[:isr])}
                  for p, (leader, replicas, isr) in enumerate(
                      [(1, (1, 2, 3), 3), (-1, (2,), 0), (3, (3, 1), 1)])]
    body = {"throttle_time_ms": 0, "cluster_id": None, "controller_id": 1,
            "brokers": [{"node_id": 1, "host": "a", "port": 9092, "rack": "r1"},
                        {"node_id": 2, "host": "host-b", "port": 9093, "rack": None}],
            "topics": [{"error_code": 0, "name": "first", "is_internal": False,
                        "partitions": partitions},
                       {"error_code": 3, "name": "missing", "is_internal": False,
                        "partitions": []},
                       {"error_code": 0, "name": "t2", "is_internal": True,
                        "partitions": partitions[:1]}]}
    frame = b"".join(encode_response(RequestHeader(ApiKey.METADATA, METADATA_VERSION, 9, None),
                                     body))[4:]
    _, decoded = decode_response(ApiKey.METADATA, METADATA_VERSION, frame)
    expected = {t["name"]: {p["partition_index"]: p["leader_id"] for p in t["partitions"]}
                for t in decoded["topics"] if t["error_code"] == 0}
    assert read_leaders(frame) == expected == {"first": {0: 1, 1: -1, 2: 3}, "t2": {0: 1}}
