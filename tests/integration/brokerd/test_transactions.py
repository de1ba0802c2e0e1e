"""Transactions with real clients against a real broker: commit and abort seen through
read_committed and read_uncommitted consumers, zombie fencing, a killed producer's open
transaction aborted at its timeout, kafka-python's and aiokafka's transactional
producers."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from tests.integration.brokerd.broker_process import BrokerProcess

pytestmark = pytest.mark.integration

#: Short enough that the timeout test finishes quickly on a loaded machine.
BROKER_PROPS = {"transaction_abort_timed_out_transaction_cleanup_interval_ms": "500"}


@pytest.fixture
def txn_broker(start_broker: Callable[..., BrokerProcess]) -> BrokerProcess:
    return start_broker(**BROKER_PROPS)


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def txn_producer(bootstrap: str, transactional_id: str, **config: object) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "linger.ms": 5, **config})
    producer.init_transactions(30)
    return producer


def values(bootstrap: str, topic: str, isolation: str, expected: int,
           partitions: int = 1, timeout: float = 20.0) -> list[bytes]:
    """Every value a consumer with ``isolation`` reads from the start, once it has read
    ``expected`` records (or the timeout passed) and nothing more arrives for a second."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{isolation}",
                         "enable.auto.commit": False, "isolation.level": isolation})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen: list[bytes] = []
    deadline = time.monotonic() + timeout
    quiet_until = None
    try:
        while time.monotonic() < deadline:
            batch = consumer.consume(500, 0.3)
            for message in batch:
                assert message.error() is None, message.error()
                value = message.value()
                assert value is not None, "every record produced here has a value"
                seen.append(value)
            if len(seen) >= expected:
                if batch:
                    quiet_until = time.monotonic() + 1.0
                elif quiet_until is None or time.monotonic() > quiet_until:
                    break
    finally:
        consumer.close()
    return seen


def lso(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lso",
                         "isolation.level": "read_committed"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10,
                                              cached=False)[1]
    finally:
        consumer.close()


def test_commit_and_abort_through_both_isolation_levels(txn_broker: BrokerProcess) -> None:
    bootstrap = txn_broker.bootstrap
    create_topic(bootstrap, "orders")
    producer = txn_producer(bootstrap, "tx-1")
    producer.begin_transaction()
    for i in range(5):
        producer.produce("orders", f"committed-{i}".encode())
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce("orders", f"aborted-{i}".encode())
    producer.flush(10)
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce("orders", b"committed-5")
    producer.commit_transaction(30)

    committed = [f"committed-{i}".encode() for i in range(6)]
    assert values(bootstrap, "orders", "read_committed", 6) == committed
    uncommitted = values(bootstrap, "orders", "read_uncommitted", 9)
    assert sorted(uncommitted) == sorted(committed + [f"aborted-{i}".encode() for i in range(3)])


def test_an_open_transaction_holds_read_committed_readers_back(
        txn_broker: BrokerProcess) -> None:
    bootstrap = txn_broker.bootstrap
    create_topic(bootstrap, "held")
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce("held", b"before")
    plain.flush(10)
    producer = txn_producer(bootstrap, "tx-held")
    producer.begin_transaction()
    producer.produce("held", b"inside")
    producer.flush(10)
    plain.produce("held", b"after")
    plain.flush(10)
    assert values(bootstrap, "held", "read_committed", 1, timeout=4) == [b"before"]
    assert lso(bootstrap, "held") == 1
    producer.commit_transaction(30)
    assert values(bootstrap, "held", "read_committed", 3) == [b"before", b"inside", b"after"]


def test_a_second_producer_with_the_same_id_fences_the_first(txn_broker: BrokerProcess) -> None:
    bootstrap = txn_broker.bootstrap
    create_topic(bootstrap, "fenced")
    zombie = txn_producer(bootstrap, "tx-shared")
    zombie.begin_transaction()
    zombie.produce("fenced", b"zombie-open")
    zombie.flush(10)
    successor = txn_producer(bootstrap, "tx-shared")  # aborts the zombie's transaction
    successor.begin_transaction()
    successor.produce("fenced", b"successor")
    successor.commit_transaction(30)
    with pytest.raises(KafkaException) as raised:
        zombie.produce("fenced", b"zombie-late")
        zombie.commit_transaction(10)
    assert raised.value.args[0].fatal() or "fenced" in str(raised.value).lower()
    assert values(bootstrap, "fenced", "read_committed", 1) == [b"successor"]


KILLED_PRODUCER = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "tx-killed",
                         "transaction.timeout.ms": 3000})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("abandoned", b"never-committed")
    producer.flush(10)
    print("open", flush=True)
    time.sleep(600)
""")


def test_a_killed_producers_transaction_is_aborted_at_its_timeout(
        txn_broker: BrokerProcess) -> None:
    bootstrap = txn_broker.bootstrap
    create_topic(bootstrap, "abandoned")
    child = subprocess.Popen([sys.executable, "-c", KILLED_PRODUCER, bootstrap],
                             stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"open"
    finally:
        child.kill()
        child.wait()
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce("abandoned", b"later")
    plain.flush(10)
    assert lso(bootstrap, "abandoned") == 0
    deadline = time.monotonic() + 30
    while lso(bootstrap, "abandoned") < 3 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert lso(bootstrap, "abandoned") == 3  # data, abort marker, later record
    assert values(bootstrap, "abandoned", "read_committed", 1) == [b"later"]


def test_kafka_python_transactional_producer_commits_and_aborts(
        txn_broker: BrokerProcess) -> None:
    from kafka import KafkaProducer

    bootstrap = txn_broker.bootstrap
    create_topic(bootstrap, "kp")
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="tx-kp")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("kp", b"kp-committed")
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send("kp", b"kp-aborted")
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close(5)
    assert values(bootstrap, "kp", "read_committed", 1) == [b"kp-committed"]
    assert sorted(values(bootstrap, "kp", "read_uncommitted", 2)) == [b"kp-aborted",
                                                                        b"kp-committed"]


def test_aiokafka_transactional_producer_commits_and_aborts(txn_broker: BrokerProcess) -> None:
    from aiokafka import AIOKafkaProducer

    bootstrap = txn_broker.bootstrap
    create_topic(bootstrap, "aio")

    async def scenario() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="tx-aio")
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send_and_wait("aio", b"aio-committed")
            await producer.begin_transaction()
            await producer.send_and_wait("aio", b"aio-aborted")
            await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert values(bootstrap, "aio", "read_committed", 1) == [b"aio-committed"]
    assert sorted(values(bootstrap, "aio", "read_uncommitted", 2)) == [b"aio-aborted",
                                                                         b"aio-committed"]
