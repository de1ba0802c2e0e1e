"""The control plane's ZooKeeper session: one kazoo client per process and connect string.

Failure handling: kazoo reconnects by itself while the session is SUSPENDED; a call made
while disconnected raises a ``KazooException``, which the Celery tasks turn into a retry.
A chrooted connect string's root is created on first use (kazoo does not create it).
"""

from __future__ import annotations

import threading

from django.conf import settings
from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from . import znodes

_clients: dict[str, KazooClient] = {}
_lock = threading.Lock()


def client(connect: str | None = None) -> KazooClient:
    """The started client for ``connect`` (default: ``settings.ZOOKEEPER_CONNECT``)."""
    connect = connect or settings.ZOOKEEPER_CONNECT
    with _lock:
        zk = _clients.get(connect)
        if zk is None or not zk.connected:
            hosts, _, chroot = connect.partition("/")
            if chroot:
                root = KazooClient(hosts=hosts, timeout=10)
                root.start(timeout=15)
                root.ensure_path("/" + chroot)
                root.stop()
                root.close()
            zk = KazooClient(hosts=connect, timeout=10)
            zk.start(timeout=15)
            _clients[connect] = zk
        return zk


def read(zk: KazooClient, path: str) -> bytes | None:
    try:
        return bytes(zk.get(path)[0] or b"")
    except NoNodeError:
        return None


def put(zk: KazooClient, path: str, data: bytes) -> bool:
    """Make ``path`` hold ``data``; True when something changed."""
    current = read(zk, path)
    if current == data:
        return False
    if current is None:
        try:
            zk.create(path, data, makepath=True)
            return True
        except NodeExistsError:
            pass
    zk.set(path, data)
    return True


def remove(zk: KazooClient, path: str) -> bool:
    """Delete ``path`` and its children; True when it existed."""
    try:
        zk.delete(path, recursive=True)
        return True
    except NoNodeError:
        return False


def notify_change(zk: KazooClient, entity_path: str) -> None:
    """Tell brokers to re-read one entity (they child-watch ``/config/changes``)."""
    zk.create(f"{znodes.CHANGES_ZNODE}/{znodes.CHANGE_PREFIX}", znodes.change_notification(entity_path),
              sequence=True, makepath=True)


def notify_acl_change(zk: KazooClient, resource: tuple[str, str, str]) -> None:
    """Tell brokers to reload the ACLs of one resource (they child-watch ``/acls/changes``)."""
    zk.create(f"{znodes.ACL_CHANGES_ZNODE}/{znodes.ACL_CHANGE_PREFIX}",
              znodes.acl_change_notification(*resource), sequence=True, makepath=True)


def put_config(zk: KazooClient, entity_path: str, config: dict[str, str] | None) -> bool:
    """Publish one entity's config (None = remove it) and notify brokers when it changed.

    A users/<u> node that still has per-client children is emptied rather than deleted, as Kafka does.
    """
    path = znodes.config_znode(entity_path)
    if config is not None:
        changed = put(zk, path, znodes.config_payload(config))
    elif zk.exists(path) and zk.get_children(path):
        changed = put(zk, path, znodes.config_payload({}))
    else:
        changed = remove(zk, path)
    if changed:
        notify_change(zk, entity_path)
    return changed


def close_all() -> None:
    """Stop every cached client (process shutdown, or a test leaving its chroot)."""
    with _lock:
        while _clients:
            _, zk = _clients.popitem()
            zk.stop()
            zk.close()
