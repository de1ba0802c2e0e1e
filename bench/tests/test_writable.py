"""Which partitions the failover's writable probe samples (:func:`bench.writable.sample`)."""

from __future__ import annotations

from bench.writable import sample
from tests.integration.cluster.harness import PartitionView

VIEW = PartitionView(2, 0, (2, 1, 3), (2, 1, 3))


def test_each_topic_is_sampled_evenly_with_its_highest_partition() -> None:
    led = {**{("a", p): VIEW for p in range(0, 3000, 3)}, ("b", 7): VIEW, ("b", 2): VIEW}
    chosen = sample(led, per_topic=5)
    a = sorted(p for topic, p in chosen if topic == "a")
    assert len(a) == 5 and a[-1] == 2997  # reconciled last: always probed
    assert a[0] < 1000  # spread over the topic, not its last five
    assert sorted(p for topic, p in chosen if topic == "b") == [2, 7]
    assert all(chosen[key] is VIEW for key in chosen)
