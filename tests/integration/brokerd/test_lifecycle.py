"""Process lifecycle against a real broker: graceful SIGTERM, crash (SIGKILL) and restart,
a corrupted segment tail, ZooKeeper registration and control-plane-created topics."""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from brokerd.coordination import znodes
from tests.integration.brokerd.broker_process import BrokerProcess
from tests.integration.brokerd.test_confluent import consume, produce

pytestmark = pytest.mark.integration


def test_sigterm_is_fast_clean_and_deregisters(broker: BrokerProcess, zk: object) -> None:
    registration = json.loads(zk.get("/brokers/ids/1")[0])  # type: ignore[attr-defined]
    assert registration["version"] == 5
    assert registration["endpoints"] == [f"PLAINTEXT://127.0.0.1:{broker.port}"]
    assert (registration["host"], registration["port"]) == ("127.0.0.1", broker.port)
    produce(broker.bootstrap, "graceful", 100)
    assert broker.stop() < 2.0
    assert broker.process is not None and broker.process.returncode == 0
    assert (broker.log_dir / ".kafka_cleanshutdown").exists()
    assert zk.exists("/brokers/ids/1") is None  # type: ignore[attr-defined]


def test_every_acknowledged_record_survives_kill_9(
        start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker()
    offsets = produce(broker.bootstrap, "crash", 5000, acks="all")
    assert len(offsets) == 5000
    broker.kill()
    broker.start()  # same port, same log dir: recovery, then re-registration
    messages = consume(broker.bootstrap, "crash", 5000)
    assert [m.offset() for m in messages] == list(range(5000))
    assert "recovering" in broker.output()
    assert produce(broker.bootstrap, "crash", 10) == list(range(5000, 5010))


def test_garbage_appended_to_a_segment_is_truncated_on_restart(
        start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker()
    produce(broker.bootstrap, "torn", 1000)
    broker.kill()
    segment = broker.log_dir / "torn-0" / ("0" * 20 + ".log")
    with segment.open("ab") as file:
        file.write(b"\x00\x00\x00\x00\x00\x00\x00\x07garbage-that-is-no-batch" * 10)
    broker.start()
    messages = consume(broker.bootstrap, "torn", 1000)
    assert len(messages) == 1000
    assert produce(broker.bootstrap, "torn", 5) == list(range(1000, 1005))
    assert len(consume(broker.bootstrap, "torn", 1005)) == 1005


def test_topic_written_by_the_control_plane_becomes_servable(
        broker: BrokerProcess, zk: object) -> None:
    assignment = znodes.TopicAssignment(uuid.uuid4(), {0: (1,), 1: (1,)})
    zk.create("/config/topics/from-zk",  # type: ignore[attr-defined]
              znodes.encode_topic_config({"retention.ms": "3600000"}))
    written = time.monotonic()
    zk.create("/brokers/topics/from-zk", assignment.encode())  # type: ignore[attr-defined]
    state_path = "/brokers/topics/from-zk/partitions/1/state"
    while zk.exists(state_path) is None:  # type: ignore[attr-defined]
        assert time.monotonic() - written < 1.0
        time.sleep(0.02)
    state = json.loads(zk.get(state_path)[0])  # type: ignore[attr-defined]
    assert (state["leader"], state["isr"], state["leader_epoch"]) == (1, [1], 0)
    assert produce(broker.bootstrap, "from-zk", 10, partition=1) == list(range(10))


def test_metrics_endpoint(broker: BrokerProcess) -> None:
    produce(broker.bootstrap, "metered", 100)
    text = urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/metrics",
                                  timeout=5).read().decode()
    assert 'kafka_server_messages_in_total{topic="metered"} 100.0' in text
    assert 'kafka_network_request_seconds_count{api="produce"}' in text
    assert 'kafka_log_size_bytes{partition="0",topic="metered"}' in text
    # Listeners on 127.0.0.1 only: the metrics endpoint listens there too, not on 0.0.0.0.
    assert _listening_addresses(broker.metrics_port) == ["127.0.0.1"]


def _listening_addresses(port: int) -> list[str]:
    """IPv4 addresses with a socket listening on ``port`` (from /proc/net/tcp)."""
    addresses = []
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        host, port_hex = local.split(":")
        if state == "0A" and int(port_hex, 16) == port:  # 0A: LISTEN
            addresses.append(".".join(str(b) for b in reversed(bytes.fromhex(host))))
    return addresses


def test_two_brokers_split_partition_leadership(
        start_broker: Callable[..., BrokerProcess]) -> None:
    first, second = start_broker(broker_id=1), start_broker(broker_id=2)
    admin = AdminClient({"bootstrap.servers": first.bootstrap})
    admin.create_topics([NewTopic("spread", 4, 1)])["spread"].result(10)
    partitions = admin.list_topics("spread", timeout=5).topics["spread"].partitions
    assert sorted(p.leader for p in partitions.values()) == [1, 1, 2, 2]
    # The second broker learns the topic a moment after the first, its partitions' states
    # one watch event at a time; producing through it at once must still work (it lists
    # the topic only once it knows every partition, so the client waits rather than
    # failing records for partitions it was not told of with _UNKNOWN_PARTITION).
    for partition in range(4):  # the client routes each partition to its leader
        assert produce(second.bootstrap, "spread", 50, partition=partition) == list(range(50))
    assert (first.log_dir / "spread-0").exists() != (second.log_dir / "spread-0").exists()


def test_kill_9_mid_stream_loses_no_acknowledged_record(
        start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker()
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True,
                         "linger.ms": 2, "message.timeout.ms": 30000})
    acked: dict[bytes, int] = {}

    def delivered(err: object, msg: object) -> None:
        if err is None:
            acked[msg.value()] = msg.offset()  # type: ignore[attr-defined]

    total = 20_000
    for i in range(total):
        producer.produce("midstream", partition=0, value=b"v%d" % i, on_delivery=delivered)
        if i % 500 == 0:
            producer.poll(0)
        if i == total // 4:
            producer.poll(0.05)
            broker.kill()  # with requests in flight and the rest queued in the client
    broker.start()
    assert producer.flush(30) == 0
    assert len(acked) == total  # the idempotent producer delivered everything, once
    stored = {m.value(): m.offset() for m in consume(broker.bootstrap, "midstream", total)}
    assert stored == acked
