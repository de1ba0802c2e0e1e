"""Dispatcher version policy (no sockets) and the replication layer's Partition /
ReplicaManager on real logs in a temporary directory."""

from __future__ import annotations

import asyncio
import struct
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from brokerd.protocol import ApiKey, ErrorCode, decode_response, encode_request
from brokerd.protocol.records import build_batch
from brokerd.replication.manager import ReplicaManager
from brokerd.security import ANONYMOUS, TenantNamespace
from brokerd.server.auth import SecurityState
from brokerd.server.dispatch import Dispatcher
from brokerd.server.handlers import API_TABLE
from brokerd.server.metrics import BrokerProbe
from brokerd.server.quotas import BrokerQuotaGlue
from brokerd.server.request import Later
from brokerd.storage import LogConfig, LogManager


class _Broker:
    probe = BrokerProbe()
    quotas = BrokerQuotaGlue()
    security = SecurityState(["User:ANONYMOUS"], max_connections_per_ip=10)
    config = SimpleNamespace(transaction_version=2)


def _dispatch(frame: bytes) -> list[Any] | None:
    dispatcher = Dispatcher(_Broker())  # type: ignore[arg-type]
    connection = SimpleNamespace(sasl_raw_tokens=False, principal=ANONYMOUS, peer_ip="127.0.0.1",
                                 namespace=TenantNamespace.for_principal(ANONYMOUS),
                                 sasl=None, sasl_session=None)
    response = asyncio.run(dispatcher(connection, memoryview(frame[4:])))  # type: ignore[arg-type]
    assert not isinstance(response, Later)  # only an acks=all produce answers later
    return response


def _raw_header(api_key: int, version: int, correlation_id: int) -> bytes:
    body = struct.pack(">hhih", api_key, version, correlation_id, 1) + b"c"
    return struct.pack(">i", len(body)) + body


def _join(buffers: list[Any]) -> bytes:
    return b"".join(bytes(b) for b in buffers)


def test_api_versions_answers_any_version() -> None:
    response = _join(_dispatch(_raw_header(ApiKey.API_VERSIONS, 42, 9)) or [])
    correlation_id, body = decode_response(ApiKey.API_VERSIONS, 0, response[4:])
    assert correlation_id == 9 and body["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    assert {entry["api_key"] for entry in body["api_keys"]} == set(API_TABLE)
    current = _join(_dispatch(encode_request(ApiKey.API_VERSIONS, 3, 1, "c", {})) or [])
    answered = decode_response(ApiKey.API_VERSIONS, 3, current[4:])[1]
    assert answered["error_code"] == 0
    # Transaction version 2 is finalized; its supported range (from 0) is left out of v3.
    assert answered["finalized_features"] == [
        {"name": "transaction.version", "max_version_level": 2, "min_version_level": 2}]
    assert answered["supported_features"] == []
    latest = _join(_dispatch(encode_request(ApiKey.API_VERSIONS, 4, 1, "c", {})) or [])
    assert decode_response(ApiKey.API_VERSIONS, 4, latest[4:])[1]["supported_features"] == [
        {"name": "transaction.version", "min_version": 0, "max_version": 2}]


def _records(*values: bytes) -> memoryview:
    return memoryview(build_batch([(None, v, [], 1_700_000_000_000) for v in values]))


def test_partition_advances_high_watermark_and_wakes_listeners(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], LogConfig())
    replicas = ReplicaManager(1, manager)
    partition = replicas.become_leader("t", 0, uuid.uuid4(), 3, LogConfig())
    woken: list[int] = []
    partition.add_listener(False, lambda: woken.append(partition.high_watermark))
    result = partition.append_as_leader(_records(b"a", b"b"))
    assert (result.base_offset, partition.high_watermark, woken) == (0, 2, [2])
    assert partition.log.read(0, 1 << 20).regions  # readable up to the high watermark
    assert replicas.become_leader("t", 0, uuid.uuid4(), 5, LogConfig()) is partition
    assert partition.leader_epoch == 5
    replicas.update_config("t", LogConfig(retention_ms=1000))
    assert partition.log.config.retention_ms == 1000
    replicas.stop_replica("t", 0, delete=False)
    assert replicas.get("t", 0) is None and manager.get("t", 0) is not None
    replicas.stop_replica("t", 0, delete=True)
    assert manager.get("t", 0) is None and not (tmp_path / "t-0").exists()


def test_request_quota_throttle_reaches_responses_that_left_it_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Group handlers build no ``throttle_time_ms``: the dispatcher still reports the
    request-quota throttle it applied (it once wrote it only where a handler had)."""
    async def heartbeat(broker: Any, request: Any) -> dict[str, Any]:
        return {"error_code": 0}

    entry = API_TABLE[ApiKey.HEARTBEAT]
    monkeypatch.setitem(API_TABLE, ApiKey.HEARTBEAT, type(entry)(
        entry.api_key, entry.min_version, entry.max_version, heartbeat))
    monkeypatch.setattr(_Broker.quotas, "request_throttle",
                        lambda connection, client_id, handler_time_ms: 250)
    frame = encode_request(ApiKey.HEARTBEAT, 4, 3, "c", {
        "group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None})
    response = _join(_dispatch(frame) or [])
    _, body = decode_response(ApiKey.HEARTBEAT, 4, response[4:])
    assert body["throttle_time_ms"] == 250
