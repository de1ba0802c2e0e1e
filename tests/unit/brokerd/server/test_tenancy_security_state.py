"""SecurityState: credentials from znode bytes, revocation of sessions, per-IP admission,
tenant plans and the rate-limited failed-login log."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from brokerd.security import Principal, SaslFailure, SaslStep
from brokerd.server.auth import SecurityState
from tenants import credentials, znodes


def _user(principal: str = "acme.app", tenant: str = "acme") -> bytes:
    return znodes.config_payload(znodes.api_key_config(
        scram_sha_256=credentials.scram_credential("pw", "SCRAM-SHA-256"),
        scram_sha_512=credentials.scram_credential("pw", "SCRAM-SHA-512"),
        principal=principal, tenant=tenant))


class _Connection:
    def __init__(self, ip: str = "10.0.0.1") -> None:
        self.peer_ip, self.peer = ip, f"{ip}:1234"
        self.principal: Any = None
        self.namespace: Any = None
        self.api_key: str | None = None
        self.closed_because: str | None = None

    def close(self, reason: str) -> None:
        self.closed_because = reason


def _login(state: SecurityState, connection: _Connection, key: str) -> None:
    step = SaslStep(b"", True, principal=Principal("acme.app", "acme"), username=key)
    state.login_finished(connection, step)  # type: ignore[arg-type]


def test_credentials_follow_the_znode_and_deletion_closes_sessions() -> None:
    state = SecurityState(["User:ANONYMOUS"], 10)
    state.user_changed("KEY1", _user())
    credentials_ = state.lookup("KEY1")
    assert credentials_ is not None and credentials_.principal.tenant == "acme"
    session, other = _Connection(), _Connection()
    assert state.admit(session) and state.admit(other)  # type: ignore[arg-type]
    _login(state, session, "KEY1")
    assert session.namespace.tenant == "acme" and session.api_key == "KEY1"
    state.user_changed("KEY1", None)
    assert state.lookup("KEY1") is None
    assert session.closed_because is not None and "deleted" in session.closed_because
    assert other.closed_because is None


def test_unusable_credentials_fail_closed(caplog: pytest.LogCaptureFixture) -> None:
    state = SecurityState([], 10)
    state.user_changed("KEY1", _user())
    with caplog.at_level(logging.WARNING):
        state.user_changed("KEY1", _user(principal="globex.app"))  # outside its tenant
    assert state.lookup("KEY1") is None and "unusable credentials" in caplog.text
    state.user_changed("KEY2", znodes.config_payload({}))  # emptied: only quotas left
    assert state.lookup("KEY2") is None


def test_connections_per_ip_are_counted_until_released() -> None:
    state = SecurityState([], max_connections_per_ip=2)
    first, second, third = _Connection(), _Connection(), _Connection()
    assert state.admit(first) and state.admit(second)  # type: ignore[arg-type]
    assert not state.admit(third)  # type: ignore[arg-type]
    assert state.admit(_Connection("10.0.0.2"))  # type: ignore[arg-type]
    state.release(first)  # type: ignore[arg-type]
    assert state.admit(third)  # type: ignore[arg-type]


def test_tenant_allowance_from_the_plan_znode() -> None:
    state = SecurityState([], 10)
    state.tenant_changed("acme", json.dumps({"version": 1, "max_partitions": 12}).encode())
    assert state.max_partitions("acme") == 12
    state.tenant_changed("acme", b"not json")
    assert state.max_partitions("acme") == 0
    assert state.max_partitions("unknown") == 0


def test_tenant_replication_factor_from_the_plan_znode() -> None:
    state = SecurityState([], max_connections_per_ip=5)
    state.tenant_changed("acme", znodes.tenant_payload(
        name="Acme", plan="ha", status="active", quota_defaults={}, max_partitions=9,
        replication_factor=3))
    assert state.replication_factor("acme") == 3
    state.tenant_changed("acme", znodes.tenant_payload(
        name="Acme", plan="basic", status="active", quota_defaults={}, max_partitions=9))
    assert state.replication_factor("acme") is None  # the plan leaves it to the cluster
    for unusable in (b'{"replication_factor": 0}', b'{"replication_factor": true}', b"{"):
        state.tenant_changed("acme", unusable)
        assert state.replication_factor("acme") is None
    state.tenant_changed("acme", None)
    assert state.replication_factor("acme") is None


def test_failed_logins_are_logged_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    state = SecurityState([], 10)
    failure = SaslStep(b"", True, failure=SaslFailure("invalid-proof", "no"), username="KEY1")
    with caplog.at_level(logging.WARNING):
        for _ in range(5):
            connection = SimpleNamespace(peer_ip="10.0.0.9", peer="10.0.0.9:5")
            state.login_finished(connection, failure)  # type: ignore[arg-type]
    lines = [r for r in caplog.records if "failed SASL login" in r.getMessage()]
    assert len(lines) == 1 and "'KEY1'" in lines[0].getMessage()
