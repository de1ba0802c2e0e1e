"""Helpers for the tenancy, SASL and hostile-input tests: a broker with SASL listeners and
control-plane writes (API keys, tenants, ACLs) done with the control plane's own functions,
so the tests exercise exactly the znodes and notifications the control plane produces."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from brokerd.protocol import ApiKey as Api
from brokerd.protocol import ErrorCode
from tenants import credentials, znodes
from tenants import zookeeper as control_plane
from tests.integration.brokerd.broker_process import BrokerProcess, WireClient
from tests.support.confluent_admin import ClientConfig
from tests.support.services import REPO_ROOT, free_port


@dataclass
class ApiKey:
    """One API key as a client uses it."""

    key: str
    secret: str
    principal: str


def add_api_key(zk: KazooClient, tenant: str, name: str, *, key: str | None = None
                ) -> ApiKey:
    """Create tenant ``tenant``'s principal ``<tenant>.<name>`` with a fresh API key."""
    api_key = ApiKey(key or credentials.new_key(), credentials.new_secret(), f"{tenant}.{name}")
    config = znodes.api_key_config(
        scram_sha_256=credentials.scram_credential(api_key.secret, "SCRAM-SHA-256"),
        scram_sha_512=credentials.scram_credential(api_key.secret, "SCRAM-SHA-512"),
        principal=api_key.principal, tenant=tenant)
    control_plane.put_config(zk, znodes.entity_path(api_key.key, None), config)
    return api_key


def delete_api_key(zk: KazooClient, api_key: ApiKey) -> None:
    control_plane.put_config(zk, znodes.entity_path(api_key.key, None), None)


def set_tenant(zk: KazooClient, slug: str, max_partitions: int = 100,
               acl_admin: bool = False) -> None:
    control_plane.put(zk, znodes.tenant_znode(slug), znodes.tenant_payload(
        name=slug, plan="test", status="active", quota_defaults={},
        max_partitions=max_partitions, acl_admin=acl_admin))


def grant(zk: KazooClient, principal: str, resource_type: str, cluster_name: str,
          operations: tuple[str, ...], pattern: str = "prefixed") -> None:
    """Allow ``principal`` ``operations`` on a resource pattern (as the control plane does)."""
    path = znodes.acl_znode(pattern, resource_type, cluster_name)
    control_plane.put(zk, path, znodes.acl_payload([(principal, op) for op in operations]))
    control_plane.notify_acl_change(zk, (pattern.upper(), resource_type, cluster_name))


def grant_tenant_admin(zk: KazooClient, api_key: ApiKey, tenant: str) -> None:
    """Everything on the tenant's own topics, groups and transactional ids."""
    for resource_type in ("Topic", "Group", "TransactionalId"):
        grant(zk, api_key.principal, resource_type, f"{tenant}.", ("All",))
    # The broker learns ACLs through ZooKeeper watches (milliseconds); tests that act at
    # once with a client library, which treats an authorization error as final, wait here.
    time.sleep(WATCH_PROPAGATION_S)


def wait_for(condition: Callable[[], Any], timeout: float = 10.0, interval: float = 0.05
             ) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        time.sleep(interval)


WATCH_PROPAGATION_S = 0.3
# Admin requests wait up to their own timeout_ms (15 s in these tests) for new leaders.
WIRE_TIMEOUT_S = 20.0
CERTS_SCRIPT = REPO_ROOT / "scripts" / "certs.sh"


@dataclass
class SecureBroker:
    """A broker with PLAINTEXT (operator), SASL_PLAINTEXT and optionally SASL_SSL."""

    process: BrokerProcess
    sasl_port: int
    sasl_ssl_port: int | None
    ca_file: Path | None

    def stop(self) -> None:
        """SIGTERM, or SIGKILL when a loaded machine makes the graceful stop too slow."""
        try:
            self.process.stop(timeout=15)
        except Exception:
            self.process.kill()

    @property
    def sasl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    @property
    def sasl_ssl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_ssl_port}"


def start_secure_broker(zk_connect: str, directory: Path, *,
                        tls_dir: str | os.PathLike[str] | None = None,
                        **properties: str) -> SecureBroker:
    """Start a broker; with ``tls_dir`` (made by scripts/certs.sh) also a SASL_SSL listener.
    ``properties`` are broker properties, usually passed as ``**{"dotted.name": value}``."""
    sasl_port = free_port()
    listeners = [f"SASL_PLAINTEXT://127.0.0.1:{sasl_port}"]
    props = {"zookeeper.session.timeout.ms": "6000", **properties}
    sasl_ssl_port = None
    tls = Path(tls_dir) if tls_dir is not None else None
    if tls is not None:
        sasl_ssl_port = free_port()
        listeners.append(f"SASL_SSL://127.0.0.1:{sasl_ssl_port}")
        props["ssl.keystore.location"] = str(tls / "broker.pem")
    process = BrokerProcess(zk_connect, directory / "logs", properties=props,
                            extra_listeners=tuple(listeners))
    process.start()
    return SecureBroker(process, sasl_port, sasl_ssl_port,
                        tls / "ca.pem" if tls is not None else None)


def try_login(port: int, api_key: ApiKey) -> tuple[WireClient, dict[str, Any]]:
    """One SASL/PLAIN login as ``api_key``: the client and the SaslAuthenticate answer."""
    client = WireClient(port, timeout=WIRE_TIMEOUT_S)
    assert client.request(Api.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == 0
    token = b"\0" + api_key.key.encode() + b"\0" + api_key.secret.encode()
    return client, client.request(Api.SASL_AUTHENTICATE, 2, {"auth_bytes": token})


def login(port: int, api_key: ApiKey, timeout: float = 5.0) -> WireClient:
    """A wire-level client authenticated as ``api_key``, retrying while the broker's
    credential watch has not yet delivered a key the test has just written."""
    deadline = time.monotonic() + timeout
    while True:
        client, answer = try_login(port, api_key)
        if answer["error_code"] == 0:
            return client
        client.close()
        assert time.monotonic() < deadline, answer
        time.sleep(0.05)


def confluent_auth(broker: SecureBroker, api_key: ApiKey) -> ClientConfig:
    return {"bootstrap.servers": broker.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": api_key.key,
            "sasl.password": api_key.secret}


def create_topic(client: WireClient, name: str, partitions: int = 1) -> None:
    """CreateTopics that must succeed.  On a loaded machine ZooKeeper may answer after the
    request's timeout (REQUEST_TIMED_OUT, topic possibly created): retry until it exists."""
    deadline = time.monotonic() + 60
    timed_out = False
    while True:
        error = client.request(Api.CREATE_TOPICS, 7, {"timeout_ms": 15000, "topics": [
            {"name": name, "num_partitions": partitions, "replication_factor": 1}]})[
                "topics"][0]["error_code"]
        if error == 0 or (timed_out and error == ErrorCode.TOPIC_ALREADY_EXISTS):
            return
        assert error == ErrorCode.REQUEST_TIMED_OUT and time.monotonic() < deadline, error
        timed_out = True
