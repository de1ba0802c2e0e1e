"""Fixtures for the console: tenants, and Django test clients signed in per role."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.test import Client

from quotas.models import Plan
from tenants import services
from tenants.models import Principal, Tenant
from tests.integration.brokerd.broker_process import BrokerProcess
from tests.support.services import free_port


@pytest.fixture
def plan(db) -> Plan:  # type: ignore[no-untyped-def]
    return Plan.objects.create(slug="basic", name="Basic", max_partitions=20,
                               producer_byte_rate=1_048_576, consumer_byte_rate=2_097_152)


@pytest.fixture
def operator(django_user_model):  # type: ignore[no-untyped-def]
    return django_user_model.objects.create_user("op", password="pw", is_staff=True)


@pytest.fixture
def make_tenant(plan: Plan, operator) -> Callable[[str], Tenant]:  # type: ignore[no-untyped-def]
    def make(slug: str) -> Tenant:
        return services.create_tenant(operator, slug=slug, name=slug.title(), plan=plan)

    return make


@pytest.fixture
def acme(make_tenant: Callable[[str], Tenant]) -> Tenant:
    return make_tenant("acme")


@pytest.fixture
def globex(make_tenant: Callable[[str], Tenant]) -> Tenant:
    return make_tenant("globex")


@pytest.fixture
def admin_client_for(django_user_model) -> Callable[[Tenant], Client]:  # type: ignore[no-untyped-def]
    """A browser-like client signed in (session) as the admin of the given tenant."""

    def make(tenant: Tenant) -> Client:
        user = django_user_model.objects.create_user(f"admin-{tenant.slug}", password="pw")
        services.create_principal(None, tenant, name=f"admin-{tenant.slug}", kind=Principal.USER,
                                  role=Principal.ADMIN, user=user)
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def operator_client(operator) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(operator)
    return client


@dataclass(frozen=True)
class KafkaBroker:
    """A running broker: PLAINTEXT for the operator (the control plane), SASL_PLAINTEXT for
    tenants' API keys (SCRAM, tenant namespaces, ACLs)."""

    process: BrokerProcess
    bootstrap: str
    sasl_bootstrap: str


@pytest.fixture
def kafka_broker(zk_connect: str, tmp_path: Path, settings) -> Iterator[KafkaBroker]:  # type: ignore[no-untyped-def]
    """A real broker (``python -m brokerd serve``) on this test's ZooKeeper chroot; the control
    plane's admin client and ZooKeeper session point at it."""
    from tenants.zookeeper import close_all

    sasl_port = free_port()
    (tmp_path / "logs-1").mkdir()
    process = BrokerProcess(zk_connect, tmp_path / "logs-1", 1,
                            properties={"zookeeper.session.timeout.ms": "6000"},
                            extra_listeners=(f"SASL_PLAINTEXT://127.0.0.1:{sasl_port}",))
    process.start()
    settings.OPERATOR_BOOTSTRAP_SERVERS = process.bootstrap
    settings.ZOOKEEPER_CONNECT = zk_connect
    yield KafkaBroker(process, process.bootstrap, f"127.0.0.1:{sasl_port}")
    close_all()
    try:
        process.stop(timeout=5)
    except Exception:
        process.kill()
