"""How the failover measurement polls the survivors (:func:`bench.failover.wait_for_topics`)."""

from __future__ import annotations

import time
from typing import Any, cast

from bench.failover import wait_for_topics
from tests.integration.cluster.harness import Cluster, PartitionView

SLOW_ANSWER_S = 1.0
FAST_SETTLES_AFTER_S = 0.3


class TwoBrokers:
    """Broker 1 answers each Metadata request after a second and holds from 1.5 s on;
    broker 3 answers at once and holds from 0.3 s on."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def metadata(self, via: int, names: list[str]) -> dict[str, dict[int, PartitionView]]:
        elapsed = time.monotonic() - self.started
        if via == 1:
            time.sleep(SLOW_ANSWER_S)
        held = elapsed >= (1.5 if via == 1 else FAST_SETTLES_AFTER_S)
        return {name: {0: PartitionView(via if held else -1, 0, (1, 3), (1, 3))}
                for name in names}


def test_a_broker_is_seen_settled_without_waiting_for_a_slower_one() -> None:
    cluster = TwoBrokers()
    settled_by: dict[int, float] = {}

    def holds(_name: str, partitions: dict[int, Any]) -> bool:
        return all(view.leader != -1 for view in partitions.values())
    last = wait_for_topics(cast(Cluster, cluster), [1, 3], {"t": 1}, holds, 30, "leaders",
                           settled_by)
    # Polled in rounds, broker 3 was asked again only once broker 1's first (one-second)
    # answer had arrived.
    assert settled_by[3] - cluster.started < FAST_SETTLES_AFTER_S + SLOW_ANSWER_S / 2
    assert last == settled_by[1] > settled_by[3]
