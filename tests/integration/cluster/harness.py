"""A real three-broker cluster for replication tests: processes, ZooKeeper, wire probes.

Why its own harness: replication tests kill, pause and restart brokers and then ask every
survivor what it believes (leader, ISR, epoch), so they need per-broker handles and
ZooKeeper-independent probes over the Kafka protocol itself.  Timeouts are short (ZooKeeper
session 6 s, the test ZooKeeper's minimum; ``replica.lag.time.max.ms`` 2 s) so failures
and recoveries happen within a test's budget.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kazoo.client import KazooClient

from brokerd.coordination import znodes
from brokerd.protocol import ApiKey
from brokerd.protocol.records import build_batch, iter_batches
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient
from tests.integration.cluster.leaders import METADATA_VERSION, read_leaders

SESSION_TIMEOUT_MS = 6_000
REPLICA_LAG_MS = 2_000
CLUSTER_PROPERTIES = {
    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "replica.lag.time.max.ms": str(REPLICA_LAG_MS),
    "replica.fetch.wait.max.ms": "200",
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "6",
    "group.initial.rebalance.delay.ms": "0",
    "log.index.size.max.bytes": "65536",
}


@dataclass(frozen=True)
class PartitionView:
    """One partition as a broker's Metadata answer describes it."""

    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


def wait_until(predicate: Callable[[], object], timeout_s: float, what: str,
               interval_s: float = 0.1) -> object:
    """Poll ``predicate`` until it returns something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = predicate()
        except (OSError, ConnectionError):
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(interval_s)


@dataclass
class Cluster:
    """Three (or ``size``) broker processes sharing the test's ZooKeeper chroot."""

    zk_connect: str
    workdir: Path
    size: int = 3
    properties: dict[str, str] = field(default_factory=dict)
    brokers: dict[int, BrokerProcess] = field(default_factory=dict)

    def start(self) -> Cluster:
        props = {**CLUSTER_PROPERTIES, **self.properties}
        for broker_id in range(1, self.size + 1):
            self.brokers[broker_id] = BrokerProcess(
                self.zk_connect, self.workdir / f"logs-{broker_id}", broker_id,
                properties=props).start()
        wait_until(lambda: all(len(self.registered_brokers(b)) == self.size
                               for b in self.live_ids()), 20, "every broker to see the others")
        return self

    # ---- processes -------------------------------------------------------------------

    def live_ids(self) -> list[int]:
        return [b for b, p in self.brokers.items()
                if p.process is not None and p.process.poll() is None]

    @property
    def bootstrap(self) -> str:
        return ",".join(self.brokers[b].bootstrap for b in sorted(self.brokers))

    def kill(self, broker_id: int) -> None:
        self.brokers[broker_id].kill()

    def restart(self, broker_id: int) -> None:
        self.brokers[broker_id].start()

    def kill_until_unregistered(self, broker_id: int, timeout_s: float) -> None:
        """SIGKILL, then wait until a survivor no longer lists it (its session expired)."""
        self.kill(broker_id)
        witness = self.live_ids()[0]
        wait_until(lambda: broker_id not in self.registered_brokers(witness), timeout_s,
                   f"broker {broker_id} to leave")

    def request_reassignments(self, topic: str, targets: dict[int, list[int]] | None) -> bool:
        """Write ``/admin/reassign_partitions`` as ZooKeeper-era tools did (None writes
        nothing); whether the node exists afterwards (the controller deletes it once every
        request in it is done or superseded)."""
        zk = KazooClient(hosts=self.zk_connect)
        zk.start()
        try:
            if targets is not None:
                zk.create(znodes.REASSIGN_PARTITIONS, json.dumps({"version": 1, "partitions": [
                    {"topic": topic, "partition": p, "replicas": replicas}
                    for p, replicas in targets.items()]}).encode(), makepath=True)
            return zk.exists(znodes.REASSIGN_PARTITIONS) is not None
        finally:
            zk.stop()
            zk.close()

    def pause(self, broker_id: int) -> None:
        self._signal(broker_id, signal.SIGSTOP)

    def resume(self, broker_id: int) -> None:
        self._signal(broker_id, signal.SIGCONT)

    def _signal(self, broker_id: int, signum: int) -> None:
        process = self.brokers[broker_id].process
        assert process is not None
        os.kill(process.pid, signum)

    def stop_all(self) -> None:
        for process in self.brokers.values():
            if process.process is not None and process.process.poll() is None:
                with_timeout_kill(process)

    def kill_all(self) -> None:
        """SIGKILL every running broker: a teardown that skips the controlled shutdowns
        (seconds each for a broker leading thousands of partitions) no test looks at."""
        for process in self.brokers.values():
            if process.process is not None and process.process.poll() is None:
                process.kill()

    # ---- probes ----------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     config: dict[str, str] | None = None) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        future = admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=replication_factor,
                      config=config or {})], operation_timeout=30, request_timeout=30)[name]
        future.result(timeout=60)
        wait_until(lambda: self.fully_replicated(name, partitions), 60,
                   f"{name} to have leaders and full ISRs")

    def metadata(self, broker_id: int, topics: list[str]) -> dict[str, dict[int, PartitionView]]:
        """Topic -> partition -> what ``broker_id`` answers to Metadata v9."""
        client = WireClient(self.brokers[broker_id].port, timeout=5)
        try:
            body = client.request(ApiKey.METADATA, 9, {
                "topics": [{"name": t} for t in topics], "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False})
        finally:
            client.close()
        return {t["name"]: {p["partition_index"]: PartitionView(
                    p["leader_id"], p["leader_epoch"], tuple(p["replica_nodes"]),
                    tuple(p["isr_nodes"])) for p in t["partitions"]}
                for t in body["topics"] if t["error_code"] == 0}

    def leaders(self, broker_id: int, topics: list[str]) -> dict[str, dict[int, int]]:
        """Topic -> partition -> the leader ``broker_id`` names, cheaply (see
        :mod:`tests.integration.cluster.leaders`)."""
        client = WireClient(self.brokers[broker_id].port, timeout=5)
        try:
            client.send(ApiKey.METADATA, METADATA_VERSION, {
                "topics": [{"name": t} for t in topics], "allow_auto_topic_creation": False})
            return read_leaders(client.receive_frame())
        finally:
            client.close()

    def registered_brokers(self, broker_id: int) -> list[int]:
        client = WireClient(self.brokers[broker_id].port, timeout=5)
        try:
            body = client.request(ApiKey.METADATA, 9, {
                "topics": [], "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False})
        finally:
            client.close()
        return sorted(b["node_id"] for b in body["brokers"])

    def view(self, topic: str, partition: int = 0, via: int | None = None) -> PartitionView:
        """The partition as a live broker (``via``, else the lowest live id) sees it."""
        asked = via if via is not None else self.live_ids()[0]
        return self.metadata(asked, [topic])[topic][partition]

    def leader(self, topic: str, partition: int = 0) -> int:
        return self.view(topic, partition).leader

    def fully_replicated(self, topic: str, partitions: int) -> bool:
        live = set(self.live_ids())
        for broker_id in live:
            views = self.metadata(broker_id, [topic]).get(topic, {})
            if len(views) != partitions:
                return False
            for view in views.values():
                if view.leader not in live or set(view.isr) != set(view.replicas) & live:
                    return False
        return True

    def await_full_isr(self, topic: str, partitions: int = 1, timeout_s: float = 30) -> None:
        try:
            wait_until(lambda: self.fully_replicated(topic, partitions), timeout_s,
                       f"every live replica of {topic} back in the ISR")
        except AssertionError as exc:
            views = {b: self.metadata(b, [topic]).get(topic) for b in self.live_ids()}
            raise AssertionError(f"{exc}; brokers' views: {views}") from None

    # ---- the logs on disk (read after the brokers stopped) ---------------------------

    def replica_batches(self, broker_id: int, topic: str, partition: int
                        ) -> dict[int, tuple[int, int]]:
        """base offset -> (last offset, CRC) of every batch in one replica's log files."""
        directory = self.brokers[broker_id].log_dir / f"{topic}-{partition}"
        batches: dict[int, tuple[int, int]] = {}
        for segment in sorted(directory.glob("*.log")):
            for _, header in iter_batches(segment.read_bytes()):
                batches[header.base_offset] = (header.last_offset, header.crc)
        return batches


def with_timeout_kill(process: BrokerProcess, timeout_s: float = 15) -> None:
    """SIGTERM, and SIGKILL if the broker does not exit in time (a test must not hang)."""
    try:
        process.stop(timeout=timeout_s)
    except Exception:
        process.kill()


def started_cluster(zk_connect: str, workdir: Path, **properties: str) -> Iterator[Cluster]:
    """Generator behind the fixtures: a started cluster, stopped afterwards."""
    cluster = Cluster(zk_connect, workdir,
                      properties={k.replace("_", "."): v for k, v in properties.items()})
    try:
        yield cluster.start()
    finally:
        for broker_id in cluster.brokers:
            process = cluster.brokers[broker_id].process
            if process is not None and process.poll() is None:
                os.kill(process.pid, signal.SIGCONT)  # a paused broker cannot stop
        cluster.stop_all()


def produce(cluster: Cluster, broker_id: int, topic: str, values: list[bytes], acks: int,
            partition: int = 0, timeout_ms: int = 5_000,
            client: WireClient | None = None) -> tuple[int, int]:
    """One Produce v9 request of ``values`` (one batch) sent straight to ``broker_id``
    (through ``client`` if given, a connection to it kept by the caller, else a new one);
    returns (error code, base offset) so tests see the protocol's own answer."""
    batch = build_batch([(None, value, [], int(time.time() * 1000)) for value in values])
    own = client is None
    if client is None:
        client = WireClient(cluster.brokers[broker_id].port, timeout=timeout_ms / 1000 + 5)
    try:
        body = client.request(ApiKey.PRODUCE, 9, {
            "transactional_id": None, "acks": acks, "timeout_ms": timeout_ms,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": partition, "records": batch}]}]})
    finally:
        if own:
            client.close()
    answer = body["responses"][0]["partition_responses"][0]
    return answer["error_code"], answer["base_offset"]
