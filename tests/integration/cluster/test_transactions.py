"""Exactly-once consume-transform-produce on three brokers (RF 3, min.insync.replicas 2):
a numbered input is copied by a transactional confluent-kafka client that commits its
consumer offsets with ``send_offsets_to_transaction``; the read_committed output must hold
every input exactly once and the group's committed offsets must match what was copied,
also when the transaction coordinator's broker is killed (-9) in the middle, and under
five chasing kill -9s of whichever broker coordinates the transaction or leads a data
partition at that moment (each victim restarts and rejoins the ISRs before the next)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from brokerd.protocol import ApiKey
from tests.integration.brokerd.broker_process import WireClient
from tests.integration.cluster.harness import Cluster, started_cluster, wait_until

pytestmark = pytest.mark.integration

INPUT, OUTPUT, GROUP, TXN_ID = "numbers", "copied", "copier", "copier-1"
PARTITIONS = 2
COUNT = 600
TXN_PARTITIONS = 5
TOPIC_CONFIG = {"min.insync.replicas": "2"}


@pytest.fixture
def txn_cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    yield from started_cluster(zk_connect, tmp_path,
                               transaction_state_log_num_partitions=str(TXN_PARTITIONS),
                               transaction_abort_timed_out_transaction_cleanup_interval_ms="1000")


def _fill_input(cluster: Cluster) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5})
    for n in range(COUNT):
        producer.produce(INPUT, str(n).encode(), partition=n % PARTITIONS)
    assert producer.flush(60) == 0


def _coordinator_broker(cluster: Cluster) -> int:
    wire = WireClient(cluster.brokers[cluster.live_ids()[0]].port)
    try:
        answer = wire.request(ApiKey.FIND_COORDINATOR, 3, {"key": TXN_ID, "key_type": 1})
    finally:
        wire.close()
    assert answer["error_code"] == 0, answer
    return int(answer["node_id"])


#: How long ``send_offsets_to_transaction`` may take before the copier gives its producer
#: up.  librdkafka 2.16 can wait forever in that call when the group coordinator's broker
#: is killed and then dropped from Metadata while the call looks for it (librdkafka #5511,
#: open), ignoring the call's own timeout (#5456); seen in 3 of 9 chasing-kill runs
#: under load, always right after the kill of the broker leading the group's offsets
#: partition.  A normal call, failover included, takes a session timeout (6 s) and an
#: election.
SEND_OFFSETS_GUARD_S = 30.0


def _transactional_producer(cluster: Cluster) -> Producer:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": TXN_ID,
                         "transaction.timeout.ms": 20_000, "linger.ms": 5})
    producer.init_transactions(60)
    return producer


def _send_offsets(producer: Producer, consumer: Consumer) -> bool:
    """``send_offsets_to_transaction`` on a daemon thread; False when it did not return
    within :data:`SEND_OFFSETS_GUARD_S` (the thread is left blocked in librdkafka)."""
    positions = consumer.position(consumer.assignment())
    metadata = consumer.consumer_group_metadata()
    done = threading.Event()
    failures: list[KafkaException] = []

    def send() -> None:
        try:
            producer.send_offsets_to_transaction(positions, metadata, 60)
        except KafkaException as exc:
            failures.append(exc)
        finally:
            done.set()

    threading.Thread(target=send, name="send-offsets", daemon=True).start()
    if not done.wait(SEND_OFFSETS_GUARD_S):
        return False
    if failures:
        raise failures[0]
    return True


def _rewind(consumer: Consumer) -> None:
    """Back to the group's committed offsets, to read an uncommitted batch again."""
    for tp in consumer.committed(consumer.assignment(), 30):
        consumer.seek(tp if tp.offset >= 0 else TopicPartition(tp.topic, tp.partition, 0))


def _copy(cluster: Cluster, stop_after: int | None = None,
          on_progress: Callable[[int], None] | None = None) -> int:
    """Run the copier until it has committed a copy of every input record (or
    ``stop_after`` transactions; a generous hang guard: failover of a killed broker takes
    a ZooKeeper session timeout plus a rebalance); returns the committed transactions.
    A producer stuck in librdkafka (see :data:`SEND_OFFSETS_GUARD_S`) is replaced by a
    new one with the same transactional id, which fences it: its transaction is aborted
    and the batch read again, as an application would recover."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": GROUP,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    producer = _transactional_producer(cluster)
    abandoned: list[Producer] = []  # stuck producers, kept alive for their blocked thread
    consumer.subscribe([INPUT])
    committed = copied = 0
    deadline = time.monotonic() + 420
    try:
        while (copied < COUNT and time.monotonic() < deadline
               and (stop_after is None or committed < stop_after)):
            messages = [m for m in consumer.consume(50, 1.0) if m.error() is None]
            if not messages:
                continue
            while True:
                try:
                    producer.begin_transaction()
                    for message in messages:
                        value, partition = message.value(), message.partition()
                        assert value is not None and partition is not None, message
                        producer.produce(OUTPUT, b"copy-" + value, partition=partition)
                    if not _send_offsets(producer, consumer):
                        abandoned.append(producer)
                        producer = _transactional_producer(cluster)
                        _rewind(consumer)
                        messages = []
                        break
                    producer.commit_transaction(60)
                    break
                except KafkaException as exc:
                    error: KafkaError = exc.args[0]
                    if error.txn_requires_abort():
                        producer.abort_transaction(60)
                        _rewind(consumer)
                        messages = []
                        break
                    if error.retriable():
                        time.sleep(0.5)
                        continue
                    raise
            if messages:
                committed += 1
                copied += len(messages)
                if on_progress is not None:
                    on_progress(committed)
    finally:
        consumer.close()
        producer.flush(10)
    return committed


def _read_output(cluster: Cluster) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "checker",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(OUTPUT, p, 0) for p in range(PARTITIONS)])
    seen: list[bytes] = []
    quiet = time.monotonic()
    try:
        while time.monotonic() - quiet < 5:
            for message in consumer.consume(500, 0.5):
                if message.error() is None:
                    value = message.value()
                    assert value is not None, "every copy has a value"
                    seen.append(value)
                    quiet = time.monotonic()
    finally:
        consumer.close()
    return seen


def _committed_offsets(cluster: Cluster) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": GROUP})
    try:
        found = consumer.committed([TopicPartition(INPUT, p) for p in range(PARTITIONS)], 30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found}


def _check(cluster: Cluster) -> None:
    output = _read_output(cluster)
    expected = sorted(f"copy-{n}".encode() for n in range(COUNT))
    assert sorted(output) == expected, (len(output), len(set(output)))
    assert _committed_offsets(cluster) == {p: COUNT // PARTITIONS for p in range(PARTITIONS)}


def test_consume_transform_produce_is_exactly_once(txn_cluster: Cluster) -> None:
    for topic in (INPUT, OUTPUT):
        txn_cluster.create_topic(topic, PARTITIONS, 3, TOPIC_CONFIG)
    _fill_input(txn_cluster)
    assert _copy(txn_cluster) > 1
    _check(txn_cluster)


def test_exactly_once_survives_killing_the_transaction_coordinator(
        txn_cluster: Cluster) -> None:
    for topic in (INPUT, OUTPUT):
        txn_cluster.create_topic(topic, PARTITIONS, 3, TOPIC_CONFIG)
    _fill_input(txn_cluster)
    killed: list[int] = []

    def kill_coordinator(committed: int) -> None:
        if committed == 3 and not killed:
            victim = _coordinator_broker(txn_cluster)
            killed.append(victim)
            txn_cluster.kill(victim)

    _copy(txn_cluster, on_progress=kill_coordinator)
    assert killed, "the copier finished before the coordinator could be killed"
    _check(txn_cluster)
    txn_cluster.restart(killed[0])
    wait_until(lambda: len(txn_cluster.live_ids()) == 3, 30, "the killed broker to return")


def _victim(cluster: Cluster, role: str) -> int:
    if role == "coordinator":
        return _coordinator_broker(cluster)
    topic, partition = role.split("-")
    return cluster.leader(topic, int(partition))


@pytest.mark.timeout(600)  # a hang guard: failovers beside the other tests
def test_exactly_once_under_five_chasing_kills(txn_cluster: Cluster) -> None:
    for topic in (INPUT, OUTPUT):
        txn_cluster.create_topic(topic, PARTITIONS, 3, TOPIC_CONFIG)
    _fill_input(txn_cluster)
    roles = ["coordinator", f"{OUTPUT}-0", "coordinator", f"{INPUT}-1", f"{OUTPUT}-1"]
    killed: list[tuple[str, int]] = []

    def chase(committed: int) -> None:
        if committed % 2 or len(killed) == len(roles):
            return
        for _, down in killed:
            if down not in txn_cluster.live_ids():
                txn_cluster.restart(down)
        for topic in (INPUT, OUTPUT, "__transaction_state"):
            txn_cluster.await_full_isr(topic, TXN_PARTITIONS if topic.startswith("__")
                                       else PARTITIONS, timeout_s=60)
        role = roles[len(killed)]
        victim = _victim(txn_cluster, role)
        killed.append((role, victim))
        txn_cluster.kill(victim)

    _copy(txn_cluster, on_progress=chase)
    assert len(killed) == len(roles), killed
    _check(txn_cluster)

