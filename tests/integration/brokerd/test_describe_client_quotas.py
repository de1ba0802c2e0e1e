"""DescribeClientQuotas against a real broker: quotas written to ZooKeeper as the control
plane writes them are described with Kafka's filters, and a removed one is gone."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient

from brokerd.protocol import ApiKey, ErrorCode
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient
from tests.integration.brokerd.quota_support import set_quota

EXACT, DEFAULT, SPECIFIED = 0, 1, 2


def described(broker: BrokerProcess, components: list[tuple[str, int, str | None]],
              strict: bool = False) -> dict[str, Any]:
    client = WireClient(broker.port, timeout=5)
    try:
        return client.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, {
            "components": [{"entity_type": kind, "match_type": match_type, "match": match}
                           for kind, match_type, match in components],
            "strict": strict})
    finally:
        client.close()


def entries(broker: BrokerProcess, components: list[tuple[str, int, str | None]],
            strict: bool = False) -> list[tuple[tuple[tuple[str, str | None], ...], dict]]:
    answer = described(broker, components, strict)
    assert answer["error_code"] == 0, answer
    return [(tuple((e["entity_type"], e["entity_name"]) for e in entry["entity"]),
             {v["key"]: v["value"] for v in entry["values"]}) for entry in answer["entries"]]


def eventually(check: Callable[[], bool], timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "the broker never showed the quotas"
        time.sleep(0.1)


def test_quotas_are_described_with_kafkas_filters(
        start_broker: Callable[..., BrokerProcess], zk: KazooClient) -> None:
    broker = start_broker()
    set_quota(zk, "alice", None, {"producer_byte_rate": 1_048_576})
    set_quota(zk, "alice", "app", {"consumer_byte_rate": 2048, "request_percentage": 50})
    set_quota(zk, None, "<default>", {"consumer_byte_rate": 4096})
    eventually(lambda: len(entries(broker, [])) == 3)
    assert entries(broker, [("user", EXACT, "alice")], strict=True) == [
        ((("user", "alice"),), {"producer_byte_rate": 1_048_576.0})]
    assert entries(broker, [("user", SPECIFIED, None), ("client-id", EXACT, "app")]) == [
        ((("user", "alice"), ("client-id", "app")),
         {"consumer_byte_rate": 2048.0, "request_percentage": 50.0})]
    assert entries(broker, [("client-id", DEFAULT, None)]) == [
        ((("client-id", None),), {"consumer_byte_rate": 4096.0})]
    refused = described(broker, [("user", EXACT, "a"), ("user", DEFAULT, None)])
    assert refused["error_code"] == int(ErrorCode.INVALID_REQUEST)
    assert "duplicate" in refused["error_message"] and refused["entries"] is None
    set_quota(zk, "alice", None, None)
    eventually(lambda: entries(broker, [("user", EXACT, "alice")], strict=True) == [])
