"""Metering on a real broker: two SASL tenants produce and consume known record batches;
``__usage`` then holds records whose sums are exactly those batches' bytes (the rule of
brokerd.metering.usage), operator traffic is not billed, and neither a clean restart nor
a kill -9 duplicates usage or reuses a (broker, window, sequence) identity.

The helpers are shared with tests/billing/test_metered_end_to_end.py."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from brokerd.protocol import ApiKey as Api
from brokerd.protocol.records import build_batch
from tests.integration.brokerd.broker_process import WireClient
from tests.integration.brokerd.tenancy_fixtures import (
    ApiKey,
    SecureBroker,
    add_api_key,
    create_topic,
    grant_tenant_admin,
    login,
    set_tenant,
    start_secure_broker,
)

USAGE_TOPIC = "__usage"
FLUSH_PROPERTIES = {"metering.flush.interval.ms": "300", "metering.topic.num.partitions": "3"}


@dataclass
class Volume:
    """What a test sent as one tenant: the metered truth to compare ``__usage`` with."""

    bytes_in: int = 0
    bytes_out: int = 0
    produce_requests: int = 0
    fetch_requests: int = 0
    stored: dict[int, int] = field(default_factory=dict)  # partition -> bytes in its log


@dataclass
class MeteredTenant:
    slug: str
    key: ApiKey
    topic: str
    volume: Volume = field(default_factory=Volume)


def make_tenant(zk: KazooClient, secure: SecureBroker, slug: str, topic: str,
                partitions: int = 2) -> MeteredTenant:
    set_tenant(zk, slug, max_partitions=10)
    key = add_api_key(zk, slug, "app")
    grant_tenant_admin(zk, key, slug)
    client = login(secure.sasl_port, key)
    try:
        create_topic(client, topic, partitions)
    finally:
        client.close()
    return MeteredTenant(slug, key, topic)


def produce_batches(secure: SecureBroker, tenant: MeteredTenant, partition: int,
                    count: int, value_size: int) -> None:
    """``count`` Produce requests of one batch each; the batch bytes are the metered input."""
    client = login(secure.sasl_port, tenant.key)
    try:
        for n in range(count):
            batch = build_batch([(f"k{n}".encode(), bytes([n % 251]) * value_size, [],
                                  int(time.time() * 1000))])
            answer = client.request(Api.PRODUCE, 9, {
                "acks": -1, "timeout_ms": 5000, "topic_data": [
                    {"name": tenant.topic, "partition_data": [
                        {"index": partition, "records": batch}]}]})
            assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0
            tenant.volume.bytes_in += len(batch)
            tenant.volume.produce_requests += 1
            tenant.volume.stored[partition] = tenant.volume.stored.get(partition, 0) + len(batch)
    finally:
        client.close()


def fetch_all(secure: SecureBroker, tenant: MeteredTenant, partition: int) -> None:
    """One Fetch of the whole partition: its answer's batch bytes are the metered output."""
    client = login(secure.sasl_port, tenant.key)
    try:
        answer = client.request(Api.FETCH, 12, {"max_wait_ms": 0, "min_bytes": 0, "topics": [
            {"topic": tenant.topic, "partitions": [
                {"partition": partition, "fetch_offset": 0, "partition_max_bytes": 1 << 24}]}]})
        records = answer["responses"][0]["partitions"][0]["records"] or b""
        assert len(records) == tenant.volume.stored.get(partition, 0)
        tenant.volume.bytes_out += len(records)
        tenant.volume.fetch_requests += 1
    finally:
        client.close()


def read_usage(bootstrap: str) -> list[dict]:
    """Every ``__usage`` record's value, read as an operator up to the high watermarks."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "metering-test",
                         "enable.auto.commit": False})
    try:
        metadata = consumer.list_topics(USAGE_TOPIC, timeout=10).topics[USAGE_TOPIC]
        if metadata.error is not None:
            return []
        ends = {p: consumer.get_watermark_offsets(TopicPartition(USAGE_TOPIC, p), timeout=10)[1]
                for p in metadata.partitions}
        consumer.assign([TopicPartition(USAGE_TOPIC, p, 0) for p, end in ends.items() if end])
        values: list[dict] = []
        remaining = sum(ends.values())
        deadline = time.monotonic() + 20
        while remaining > 0 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            offset, partition, raw = message.offset(), message.partition(), message.value()
            assert offset is not None and partition is not None and raw is not None, message
            if offset < ends[partition]:
                remaining -= 1
                value = json.loads(raw)
                assert message.key() == value["tenant"].encode()
                values.append(value)
        assert remaining <= 0, f"{remaining} usage records unread"
        return values
    finally:
        consumer.close()


def distinct_records(values: list[dict]) -> list[dict]:
    """Deduplicate by (broker, window, sequence) as the job does, asserting that copies of
    one identity are identical (a reused identity would make the job drop real usage)."""
    by_identity: dict[tuple[int, int, int], dict] = {}
    for value in values:
        identity = (value["broker_id"], value["window_start"], value["sequence"])
        assert by_identity.setdefault(identity, value) == value, f"{identity} reused"
    return list(by_identity.values())


def metered(values: list[dict], tenant: str) -> Volume:
    """A tenant's sums over distinct records, with each partition's largest storage sample."""
    volume = Volume()
    for value in distinct_records(values):
        if value["tenant"] != tenant:
            continue
        for entry in value["traffic"]:
            volume.bytes_in += entry["bytes_in"]
            volume.bytes_out += entry["bytes_out"]
            volume.produce_requests += entry["produce_requests"]
            volume.fetch_requests += entry["fetch_requests"]
        for sample in value["storage"]:
            partition = sample["partition"]
            volume.stored[partition] = max(volume.stored.get(partition, 0),
                                           sample["stored_bytes"])
    return volume


def wait_until_metered(bootstrap: str, tenants: list[MeteredTenant],
                       timeout: float = 20.0) -> list[dict]:
    """``__usage`` once every tenant's metered sums equal what it sent (or fail showing
    the difference)."""
    deadline = time.monotonic() + timeout
    while True:
        values = read_usage(bootstrap)
        seen = {t.slug: metered(values, t.slug) for t in tenants}
        if all(seen[t.slug] == t.volume for t in tenants):
            return values
        if time.monotonic() > deadline:
            assert seen == {t.slug: t.volume for t in tenants}
        time.sleep(0.3)


@pytest.fixture
def secure(zk_connect: str, tmp_path: Path) -> Iterator[SecureBroker]:
    broker = start_secure_broker(zk_connect, tmp_path, **FLUSH_PROPERTIES)
    yield broker
    broker.stop()


def test_usage_matches_known_volumes_and_survives_restarts(
        secure: SecureBroker, zk: KazooClient) -> None:
    acme = make_tenant(zk, secure, "acme", "orders")
    globex = make_tenant(zk, secure, "globex", "events", partitions=1)
    produce_batches(secure, acme, 0, 5, 1000)
    produce_batches(secure, acme, 1, 3, 2500)
    produce_batches(secure, globex, 0, 4, 300)
    fetch_all(secure, acme, 0)
    fetch_all(secure, globex, 0)
    fetch_all(secure, globex, 0)
    # Operator traffic (PLAINTEXT, ANONYMOUS) on a tenant topic is not billed.
    operator = WireClient(secure.process.port)
    operator.request(Api.FETCH, 12, {"max_wait_ms": 0, "min_bytes": 0, "topics": [
        {"topic": "acme.orders", "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
    operator.close()

    values = wait_until_metered(secure.process.bootstrap, [acme, globex])
    assert {v["version"] for v in values} == {1}
    assert {v["broker_id"] for v in values} == {1}
    assert all(v["window_start"] % 60_000 == 0 for v in values)
    principals = {(e["principal"], e["topic"]) for v in values for e in v["traffic"]}
    assert principals == {("User:acme.app", "orders"), ("User:globex.app", "events")}

    # Clean restart: traffic just before SIGTERM is flushed by the shutdown (partial minute).
    produce_batches(secure, acme, 0, 2, 700)
    secure.process.stop(timeout=15)
    secure.process.start()
    produce_batches(secure, globex, 0, 1, 5000)  # same minute, most likely: new sequences
    wait_until_metered(secure.process.bootstrap, [acme, globex])

    # kill -9: what was flushed stays, at most the unflushed interval is lost, and the
    # restarted broker reuses no identity.
    produce_batches(secure, acme, 1, 1, 100)
    wait_until_metered(secure.process.bootstrap, [acme, globex])
    sent_before = globex.volume.bytes_in
    produce_batches(secure, globex, 0, 1, 64)
    unflushed = globex.volume.bytes_in - sent_before
    secure.process.kill()
    secure.process.start()
    after_kill = metered(read_usage(secure.process.bootstrap), "globex")
    assert after_kill.bytes_in in (sent_before, sent_before + unflushed)
    globex.volume.bytes_in = after_kill.bytes_in  # a lost interval stays lost...
    globex.volume.produce_requests = after_kill.produce_requests
    produce_batches(secure, acme, 0, 1, 10)
    produce_batches(secure, globex, 0, 1, 10)
    # ...but nothing else is: every later byte is metered once, under fresh identities.
    wait_until_metered(secure.process.bootstrap, [acme, globex])


def test_usage_counted_before_a_clean_shutdown_is_appended_after_the_restart(
        zk_connect: str, zk: KazooClient, tmp_path: Path) -> None:
    """No flush ran and ``__usage`` did not exist yet: the shutdown keeps the records on
    disk, and the restarted broker creates the topic and appends them."""
    secure = start_secure_broker(zk_connect, tmp_path, **{
        **FLUSH_PROPERTIES, "metering.flush.interval.ms": str(3_600_000)})
    try:
        acme = make_tenant(zk, secure, "acme", "orders", partitions=1)
        produce_batches(secure, acme, 0, 3, 800)
        secure.process.stop(timeout=15)
        assert (secure.process.log_dir / "metering-pending.json").exists()
        secure.process.properties.update(FLUSH_PROPERTIES)
        secure.process.start()
        wait_until_metered(secure.process.bootstrap, [acme])
        assert not (secure.process.log_dir / "metering-pending.json").exists()
    finally:
        secure.stop()
