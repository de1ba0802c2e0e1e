"""Fixtures for the control plane: API clients per role, and a real Celery worker.

The worker is Celery's own (``celery.contrib.testing.worker``) running in a thread of this
pytest process, consuming this process's private queue on the real Redis, so tasks run
against the same test database and see per-test settings (the ZooKeeper chroot).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest
from rest_framework.test import APIClient

from tenants.models import Tenant
from tests.integration.brokerd.broker_process import BrokerProcess
from tests.support.services import free_port

T = TypeVar("T")


@pytest.fixture(scope="session")
def celery_worker_thread(django_db_setup, django_db_blocker) -> Iterator[None]:  # type: ignore[no-untyped-def]
    from celery.contrib.testing.worker import start_worker

    from service.celery import app

    with django_db_blocker.unblock():
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
            yield
    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge(app.conf.task_default_queue)


@pytest.fixture
def publishing(celery_worker_thread, transactional_db, settings, zk_connect) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """Writes commit for real, tasks run on the worker, and publish into this test's chroot."""
    from tenants.zookeeper import close_all

    settings.ZOOKEEPER_CONNECT = zk_connect
    yield zk_connect
    close_all()


@pytest.fixture
def operator_api(operator) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(operator)
    return client


@pytest.fixture
def admin_api(make_tenant_admin) -> Callable[[Tenant], APIClient]:  # type: ignore[no-untyped-def]
    """An API client signed in as the admin of the given tenant."""

    def make(tenant: Tenant) -> APIClient:
        client = APIClient()
        client.force_authenticate(make_tenant_admin(tenant))
        return client

    return make


def wait_for(predicate: Callable[[], T | None], timeout: float = 15.0) -> T:
    """Poll until predicate() is truthy (the Celery worker publishes asynchronously).

    On the in-memory SQLite test database (shared cache) a read fails at once with "database
    table is locked" while the worker thread writes; such a poll counts as "not yet".
    """
    from django.db import OperationalError

    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except OperationalError:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(0.05)


@contextmanager
def running_brokers(zk_connect: str, directory: Path, settings, racks: Mapping[int, str | None],  # type: ignore[no-untyped-def]
                    sasl: bool = False) -> Iterator[list[tuple[BrokerProcess, int | None]]]:
    """Brokers on the test's chroot, the control plane's admin client pointed at them."""
    started: list[tuple[BrokerProcess, int | None]] = []
    try:
        for broker_id, rack in racks.items():
            sasl_port = free_port() if sasl else None
            properties = {"zookeeper.session.timeout.ms": "6000"}
            if rack:
                properties["broker.rack"] = rack
            broker = BrokerProcess(zk_connect, directory / f"logs-{broker_id}", broker_id,
                                   properties=properties,
                                   extra_listeners=(f"SASL_PLAINTEXT://127.0.0.1:{sasl_port}",)
                                   if sasl_port else ())
            started.append((broker, sasl_port))
            broker.start()
        settings.OPERATOR_BOOTSTRAP_SERVERS = ",".join(b.bootstrap for b, _ in started)
        yield started
    finally:
        for broker, _ in started:
            if broker.process is not None and broker.process.poll() is None:
                try:
                    broker.stop(timeout=5)
                except Exception:
                    broker.kill()
