"""When failed-over partitions take acks=all writes again: the failover a producer sees.

``kill_s`` (:mod:`bench.failover`) ends when every survivor's Metadata names a live
leader for every partition.  A producer needs more than that answer: the named leader
must have applied its leadership (its reconciler reaches each partition a slice at a
time), and, for ``acks=all`` with ``min.insync.replicas=2``, the other survivor must
follow it.  Until then the leader answers NOT_LEADER_OR_FOLLOWER, or the request waits.

So a sample of the victim's partitions is written to from the kill on, each by its own
thread sending one-record Produce requests (acks=all) straight to the survivor Kafka's
election rule names (the first other replica in assignment order; the other one too
every :data:`OTHER_EVERY` rounds), every :data:`RETRY_S` until one acknowledges it, over
connections kept open: the probe should load the failing-over survivors no more than a
few producers retrying would.  The sample is spread over every topic and always holds
each topic's highest partition, which the reconciler reaches last.  The figure is when
the last of them was acknowledged.
"""

from __future__ import annotations

import itertools
import threading
import time

from tests.integration.brokerd.broker_process import WireClient
from tests.integration.cluster.harness import Cluster, PartitionView, produce

SAMPLES_PER_TOPIC = 5
RETRY_S = 0.25
OTHER_EVERY = 4
# How long one acks=all request may wait for the follower: a write appended by a leader
# whose follower has not started fetching yet is acknowledged within this, or retried.
ACK_TIMEOUT_MS = 1000
PROBE_VALUE = b"writable-probe"


def sample(led: dict[tuple[str, int], PartitionView], per_topic: int = SAMPLES_PER_TOPIC
           ) -> dict[tuple[str, int], PartitionView]:
    """At most ``per_topic`` of each topic's partitions in ``led``, evenly spaced, the
    highest always among them."""
    chosen: dict[tuple[str, int], PartitionView] = {}
    for topic in sorted({name for name, _ in led}):
        indexes = sorted(p for name, p in led if name == topic)
        step = max(1, len(indexes) // per_topic)
        for index in indexes[::-1][::step][:per_topic]:
            chosen[(topic, index)] = led[(topic, index)]
    return chosen


class WritableProbe:
    """Writes to ``partitions`` (led by ``victim`` until it died) from :meth:`start` on;
    :meth:`wait` returns each one's seconds from ``started`` to its first acknowledgement."""

    def __init__(self, cluster: Cluster, victim: int,
                 partitions: dict[tuple[str, int], PartitionView]) -> None:
        self.cluster, self.victim, self.partitions = cluster, victim, partitions
        self.acked_after: dict[tuple[str, int], float] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started = 0.0

    def start(self, started: float) -> None:
        self._started = started
        for key, view in self.partitions.items():
            thread = threading.Thread(target=self._write_until_acked, args=(key, view),
                                      daemon=True, name=f"writable-{key[0]}-{key[1]}")
            thread.start()
            self._threads.append(thread)

    def wait(self, timeout_s: float) -> dict[tuple[str, int], float]:
        """Every sampled partition's time to its first acknowledgement; raises when one
        was not acknowledged within ``timeout_s`` (the failover did not complete)."""
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._stop.set()
        missing = sorted(set(self.partitions) - set(self.acked_after))
        if missing:
            raise AssertionError(f"{len(missing)} partitions took no acks=all write within "
                                 f"{timeout_s} s of the kill, e.g. {missing[:5]}")
        return dict(self.acked_after)

    def _write_until_acked(self, key: tuple[str, int], view: PartitionView) -> None:
        survivors = [b for b in view.replicas if b != self.victim]
        clients: dict[int, WireClient] = {}
        try:
            for round_ in itertools.count():
                if self._stop.is_set():
                    return
                # The broker Kafka's rule elects every round; the other every
                # OTHER_EVERY rounds, in case the rule did not apply (an ISR not full).
                asked = survivors if round_ % OTHER_EVERY == 0 else survivors[:1]
                if any(self._acknowledged(clients, broker_id, *key) for broker_id in asked):
                    self.acked_after[key] = time.monotonic() - self._started
                    return
                self._stop.wait(RETRY_S)
        finally:
            for client in clients.values():
                client.close()

    def _acknowledged(self, clients: dict[int, WireClient], broker_id: int, topic: str,
                      partition: int) -> bool:
        """One acks=all write through a kept connection (connecting costs a busy
        survivor more than the request); a failed connection is made anew next time."""
        try:
            if broker_id not in clients:
                clients[broker_id] = WireClient(self.cluster.brokers[broker_id].port,
                                                timeout=ACK_TIMEOUT_MS / 1000 + 5)
            error, _ = produce(self.cluster, broker_id, topic, [PROBE_VALUE], acks=-1,
                               partition=partition, timeout_ms=ACK_TIMEOUT_MS,
                               client=clients[broker_id])
        except (OSError, ConnectionError):
            failed = clients.pop(broker_id, None)
            if failed is not None:
                failed.close()
            return False  # a survivor too busy to answer in time is asked again
        return error == 0
