"""Topic sizes on disk as the brokers report them, read from their Prometheus endpoints.

Each broker's ``/metrics`` text carries ``kafka_log_size_bytes{topic,partition}``: the bytes of
every partition log it holds, read from the logs at scrape time.  Topics there are cluster-wide
names (``<tenant-slug>.<topic>``).  A broker is found through its ``/brokers/ids/<id>``
registration, which names its ``metrics_port`` (see :mod:`dashboard.broker_metrics`).

Invariant: a topic's size is only reported when every one of its partitions was seen; a
partition held by a broker that did not answer would otherwise silently shrink the total.
Parsing is pure; :func:`scrape_topic_sizes` is the only I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kazoo.client import KazooClient
from prometheus_client.parser import text_string_to_metric_families

from .broker_metrics import fetch_metrics

LOG_SIZE_METRIC = "kafka_log_size_bytes"

PartitionSizes = dict[tuple[str, int], int]


def parse_log_sizes(text: str) -> PartitionSizes:
    """(cluster-wide topic, partition) -> bytes on disk, from one broker's Prometheus text."""
    sizes: PartitionSizes = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == LOG_SIZE_METRIC:
                key = (sample.labels["topic"], int(sample.labels["partition"]))
                sizes[key] = int(sample.value)
    return sizes


@dataclass
class TopicSizes:
    """Partition sizes merged over the brokers that answered, and the ids of those that did not.

    Merging keeps the largest size seen for a partition: today a partition lives on its leader
    only, and once replicas exist a follower's copy is at most as long as the leader's, so the
    maximum is the leader's log either way (a sum would count each replica again).
    """

    partitions: PartitionSizes = field(default_factory=dict)
    unreachable: list[int] = field(default_factory=list)

    def merge(self, sizes: PartitionSizes) -> None:
        for key, size in sizes.items():
            self.partitions[key] = max(size, self.partitions.get(key, 0))

    def totals(self) -> dict[str, int]:
        """Cluster-wide topic -> bytes, summed over the partitions that were seen."""
        totals: dict[str, int] = {}
        for (topic, _partition), size in self.partitions.items():
            totals[topic] = totals.get(topic, 0) + size
        return totals

    def size(self, topic: str, partition_count: int) -> int | None:
        """The topic's bytes if all of its ``partition_count`` partitions were seen, else None
        (a broker did not answer, or the topic has not reached the brokers yet)."""
        try:
            return sum(self.partitions[(topic, p)] for p in range(partition_count))
        except KeyError:
            return None


def scrape_topic_sizes(zk: KazooClient) -> TopicSizes:
    """Read every registered broker's partition sizes; brokers that do not answer are listed
    in ``unreachable`` and skipped."""
    texts, unreachable = fetch_metrics(zk)
    sizes = TopicSizes(unreachable=unreachable)
    for _broker_id, text in sorted(texts.items()):
        sizes.merge(parse_log_sizes(text))
    return sizes
