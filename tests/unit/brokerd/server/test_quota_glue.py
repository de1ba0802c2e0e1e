"""The broker's quota glue with a fake connection and clock: who is charged, what a throttle
does to the connection, how ZooKeeper data reaches the store, and the handlers' use of it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from brokerd.protocol import RequestHeader
from brokerd.quota import QuotaType
from brokerd.security import ANONYMOUS, Principal
from brokerd.server.handlers import fetch, produce
from brokerd.server.quotas import BrokerQuotaGlue
from brokerd.server.request import Request

TENANT_USER = Principal("acme.orders", "acme")


@dataclass
class FakeConnection:
    principal: Principal | None = ANONYMOUS
    mutes: list[float] = field(default_factory=list)
    closed: str | None = None

    def mute_for(self, seconds: float) -> None:
        self.mutes.append(seconds)

    def close(self, reason: str) -> None:
        self.closed = reason


class FakeClock:
    def __init__(self) -> None:
        self.now_ms = 0

    def __call__(self) -> int:
        return self.now_ms


def _glue() -> tuple[BrokerQuotaGlue, FakeClock]:
    clock = FakeClock()
    return BrokerQuotaGlue(clock=clock), clock


def test_a_throttled_produce_mutes_the_connection_for_the_throttle() -> None:
    glue, _ = _glue()
    glue.quota_entity_changed("clients/app-1", {"producer_byte_rate": "1000"})
    connection = FakeConnection()
    # 3 000 B over the one-window cold span (1 s) is 3x the quota: (3000-1000)/1000 x 1000.
    throttle = glue.produce_throttle(connection, "app-1", request_bytes=3_000, acks=1,
                                     handler_time_ms=1)
    assert throttle == 2_000 and connection.mutes == [2.0]
    other = FakeConnection()
    assert glue.produce_throttle(other, "app-2", request_bytes=3_000, acks=1,
                                 handler_time_ms=1) == 0
    assert other.mutes == []


def test_an_unauthenticated_connection_is_charged_nothing() -> None:
    glue, _ = _glue()
    glue.quota_entity_changed("clients/<default>", {"request_percentage": "1"})
    connection = FakeConnection(principal=None)
    assert glue.request_throttle(connection, "c", handler_time_ms=1_000) == 0
    assert glue.quotas.snapshot(0) == [] and connection.mutes == []


def test_tenant_principals_get_their_plan_and_tenant_scoped_client_ids() -> None:
    glue, _ = _glue()
    glue.tenant_quota_defaults_changed("acme", {"producer_byte_rate": "500"})
    assert glue.produce_throttle(FakeConnection(TENANT_USER), "app-1", request_bytes=1_000,
                                 acks=1, handler_time_ms=0) == 1_000
    [metrics] = [m for m in glue.quotas.snapshot(0) if m.quota_type is QuotaType.PRODUCE]
    assert metrics.source == "tenant acme plan (users/<default>)"
    # A tenant whose plan sets no quotas is still a tenant: its client-id levels are its own.
    glue.quota_entity_changed("clients/app-1", {"consumer_byte_rate": "100"})
    glue.fetch_throttle(FakeConnection(Principal("beta.x", "beta")), "app-1",
                        response_bytes=10, handler_time_ms=0)
    tenants = {m.entity.tenant for m in glue.quotas.snapshot(0)
               if m.quota_type is QuotaType.FETCH}
    assert tenants == {"beta"}


def test_operators_use_the_cluster_default_user_levels() -> None:
    glue, _ = _glue()
    glue.quota_entity_changed("users/<default>", {"producer_byte_rate": "1000"})
    glue.tenant_quota_defaults_changed("acme", {"producer_byte_rate": "1000000"})
    assert glue.produce_throttle(FakeConnection(ANONYMOUS), "c", request_bytes=2_000, acks=1,
                                 handler_time_ms=0) == 1_000


def test_unusable_zookeeper_data_keeps_the_previous_quota() -> None:
    glue, _ = _glue()
    glue.quota_entity_changed("clients/app-1", {"producer_byte_rate": "1000"})
    glue.quota_entity_changed("clients/app-1", {"producer_byte_rate": "lots"})
    glue.quota_entity_changed("users/a/b", {"producer_byte_rate": "1"})  # malformed path
    glue.tenant_quota_defaults_changed("acme", {"consumer_byte_rate": "-1"})
    assert glue.produce_throttle(FakeConnection(), "app-1", request_bytes=2_000, acks=1,
                                 handler_time_ms=0) == 1_000
    glue.quota_entity_changed("clients/app-1", None)  # deleted: unlimited
    assert glue.produce_throttle(FakeConnection(), "app-1", request_bytes=10**9, acks=1,
                                 handler_time_ms=0) == 0


def test_fetch_cap_follows_the_remaining_allowance() -> None:
    glue, clock = _glue()
    glue.quota_entity_changed("clients/c", {"consumer_byte_rate": "10000"})
    connection = FakeConnection()
    assert glue.fetch_max_bytes(connection, "c", 50_000_000) == 10_000  # one cold window
    assert glue.fetch_throttle(connection, "c", response_bytes=10_000, handler_time_ms=0) == 0
    clock.now_ms = 500  # span 1.5 s: 15 000 allowed in all, 10 000 taken
    assert glue.fetch_max_bytes(connection, "c", 50_000_000) == 5_000
    assert glue.fetch_max_bytes(connection, "c", 1_000) == 1_000
    assert glue.fetch_max_bytes(connection, "other", 1_000) == 1_000  # unlimited


def test_metrics_are_a_snapshot_taken_on_refresh() -> None:
    glue, _ = _glue()
    glue.request_throttle(FakeConnection(), "c", handler_time_ms=5)
    assert glue.latest_metrics == []
    glue.refresh_metrics()
    assert [m.quota_type for m in glue.latest_metrics] == [QuotaType.REQUEST]


# ---- handlers -------------------------------------------------------------------------


class _Broker:
    """Only what produce/fetch touch when every partition is unknown."""

    def __init__(self, glue: BrokerQuotaGlue) -> None:
        self.quotas = glue
        self.replicas = SimpleNamespace(get=lambda topic, partition: None,
                                        leader=lambda topic, partition: None)
        self.cache = SimpleNamespace(partition_state=lambda topic, partition: None)
        self.shutting_down = asyncio.Event()
        self.probe = SimpleNamespace(bytes_out=lambda topic, nbytes: None)
        self.metering = SimpleNamespace(produced=lambda *args: None, fetched=lambda *args: None)

    def leader_partition(self, topic: str, partition: int, current_leader_epoch: int = -1
                         ) -> tuple[None, int]:
        return None, 3  # UNKNOWN_TOPIC_OR_PARTITION


def _request(api_key: int, version: int, body: dict[str, Any], connection: FakeConnection,
             frame_bytes: int = 0) -> Request:
    return Request(RequestHeader(api_key, version, 1, "app-1"), body, connection,  # type: ignore[arg-type]
                   frame_bytes)


def _produce_body(acks: int) -> dict[str, Any]:
    return {"acks": acks, "timeout_ms": 1000, "transactional_id": None,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"x"}]}]}


def test_produce_charges_the_whole_request_and_returns_the_throttle() -> None:
    glue, _ = _glue()
    glue.quota_entity_changed("clients/app-1", {"producer_byte_rate": "1000"})
    connection = FakeConnection()
    response = asyncio.run(produce.handle(_Broker(glue), _request(  # type: ignore[arg-type]
        0, 9, _produce_body(acks=1), connection, frame_bytes=4_000)))
    assert isinstance(response, dict) and response["throttle_time_ms"] == 3_000
    assert connection.mutes == [3.0]


def test_acks_zero_produce_has_no_response_but_is_muted() -> None:
    glue, _ = _glue()
    glue.quota_entity_changed("clients/app-1", {"producer_byte_rate": "1000"})
    connection = FakeConnection()
    response = asyncio.run(produce.handle(_Broker(glue), _request(  # type: ignore[arg-type]
        0, 9, _produce_body(acks=0), connection, frame_bytes=2_000)))
    assert response is None and connection.mutes == [1.0]


def _fetch_body(replica_id: int = -1) -> dict[str, Any]:
    return {"replica_id": replica_id, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": "t", "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def test_fetch_over_quota_is_answered_empty_without_reading() -> None:
    glue, _ = _glue()
    glue.quota_entity_changed("clients/app-1", {"consumer_byte_rate": "1000"})
    glue.quotas.fetch.record_and_get_throttle_ms("ANONYMOUS", "app-1", None, 5_000, 0)
    connection = FakeConnection()
    response = asyncio.run(fetch.handle(_Broker(glue), _request(  # type: ignore[arg-type]
        1, 12, _fetch_body(), connection)))
    assert response["responses"] == [] and response["throttle_time_ms"] == 4_000
    assert connection.mutes == [4.0]


def test_follower_fetches_are_exempt() -> None:
    glue, _ = _glue()
    glue.quota_entity_changed("clients/app-1", {"consumer_byte_rate": "1000"})
    glue.quotas.fetch.record_and_get_throttle_ms("ANONYMOUS", "app-1", None, 5_000, 0)
    connection = FakeConnection()
    response = asyncio.run(fetch.handle(_Broker(glue), _request(  # type: ignore[arg-type]
        1, 12, _fetch_body(replica_id=2), connection)))
    assert response["throttle_time_ms"] == 0 and len(response["responses"]) == 1
    assert connection.mutes == []


# ---- connection muting ----------------------------------------------------------------


SECOND_MUTE_S = 1.0


def test_a_mute_holds_frames_already_received_and_a_second_mute_extends_it() -> None:
    from tests.unit.brokerd.server.test_connection import Harness, frame

    async def scenario() -> tuple[Harness, list[tuple[float, bytes]]]:
        loop = asyncio.get_running_loop()
        harness = Harness()
        processed: list[tuple[float, bytes]] = []

        async def process(connection: Any, frame: memoryview) -> list[Any] | None:
            processed.append((loop.time(), bytes(frame)))
            if bytes(frame) == b"throttled":
                connection.mute_for(0.05)
                # Extends: the 0.05 s timer must not unmute.  The second mute is long so
                # that a busy machine's late wake-up below still lands inside it (with
                # 0.10 s, a 0.07 s sleep overshooting by 30 ms failed under make test).
                connection.mute_for(SECOND_MUTE_S)
            return [b"re:", bytes(frame)]

        harness.connection._processor = process
        started = loop.time()
        # Pipelined: both frames are in our buffer before the first is processed.
        harness.feed(frame(b"throttled") + frame(b"next"), 4096)
        await asyncio.sleep(0.15)
        assert not harness.transport.reading  # still muted after the first timer
        assert [payload for _, payload in processed] == [b"throttled"]
        assert b"re:throttled" in b"".join(harness.transport.written)  # answered at once
        await harness.settle()
        assert harness.transport.reading
        return harness, [(at - started, payload) for at, payload in processed]

    _, processed = asyncio.run(scenario())
    assert processed[1][1] == b"next" and processed[1][0] >= 0.10
