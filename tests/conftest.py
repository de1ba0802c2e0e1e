"""Session-wide real services and per-test ZooKeeper chroots.

The controlling pytest process starts one ZooKeeper (and a private Redis when
``REDIS_URL`` does not answer) in ``pytest_configure`` and exports their addresses
as ``TEST_ZOOKEEPER`` / ``REDIS_URL``; xdist workers are spawned after that and
inherit the environment, so the whole run shares one of each.
"""

from __future__ import annotations

import os

# Before anything imports brokerd: the broker's response encoders refuse misspelled and
# missing keys in this process and in every broker process it starts (they inherit it).
os.environ["BROKERD_STRICT_ENCODING"] = "1"

import uuid  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from tests.support.services import (  # noqa: E402
    ManagedProcess,
    redis_answers,
    start_redis,
    start_zookeeper,
)
from tests.support.zk_tree import delete_tree  # noqa: E402

pytest_plugins = ["tests.support.tenant_fixtures"]

_owned: list[ManagedProcess] = []

# Property tests judge correctness, not speed: on a loaded 2-core CI machine a single example
# can exceed hypothesis' default 200 ms deadline, which would make failures depend on timing.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller already exported the addresses
    if "TEST_ZOOKEEPER" not in os.environ:
        zookeeper = start_zookeeper()
        _owned.append(zookeeper)
        os.environ["TEST_ZOOKEEPER"] = zookeeper.address
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    if not redis_answers(redis_url):
        redis_server = start_redis()
        _owned.append(redis_server)
        redis_url = redis_server.address
    os.environ["REDIS_URL"] = redis_url


# Modules that run for minutes on one xdist worker (``--dist loadfile`` keeps a module on
# one worker): collected first, so they start at once instead of ending the run alone.
LONG_RUNNING_FIRST = ("tests/faults/", "tests/integration/cluster/", "tests/billing/")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid
        return next((i for i, prefix in enumerate(LONG_RUNNING_FIRST)
                     if path.startswith(prefix)), len(LONG_RUNNING_FIRST))
    items.sort(key=rank)  # stable: each module's own order is kept


def pytest_unconfigure(config: pytest.Config) -> None:
    while _owned:
        _owned.pop().stop()


@pytest.fixture(scope="session")
def zookeeper_address() -> str:
    """host:port of the session's real ZooKeeper."""
    return os.environ["TEST_ZOOKEEPER"]


@pytest.fixture
def zk_connect(zookeeper_address: str) -> Iterator[str]:
    """A connect string with a chroot of this test's own, e.g. ``127.0.0.1:2181/t-1a2b…``.

    The chroot node is created up front (kazoo does not create it) and removed afterwards.
    """
    from kazoo.client import KazooClient

    chroot = f"/t-{uuid.uuid4().hex[:12]}"
    client = KazooClient(hosts=zookeeper_address, timeout=10)
    client.start(timeout=30)
    client.ensure_path(chroot)
    try:
        yield f"{zookeeper_address}{chroot}"
    finally:
        delete_tree(client, chroot)
        client.stop()
        client.close()


def _started_client(hosts: str, **options: object) -> Iterator[object]:
    from kazoo.client import KazooClient

    client = KazooClient(hosts=hosts, timeout=10, **options)
    client.start(timeout=30)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture
def zk(zk_connect: str) -> Iterator[object]:
    """A started kazoo client rooted at this test's chroot."""
    yield from _started_client(zk_connect)


@pytest.fixture
def buffered_zk(zk_connect: str) -> Iterator[object]:
    """Another client on the same chroot through the broker's own handler (buffered
    sockets, :mod:`brokerd.coordination.zk_handler`)."""
    from brokerd.coordination.zk_handler import PollingHandler

    yield from _started_client(zk_connect, handler=PollingHandler())
