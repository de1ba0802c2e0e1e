"""The control plane's ZooKeeper session: one kazoo client per process and connect string.

Failure handling: kazoo reconnects by itself while the session is SUSPENDED; a call made
while disconnected raises a ``KazooException``, which the Celery tasks turn into a retry.
A chrooted connect string's root is created on first use (kazoo does not create it).
"""

from __future__ import annotations

import threading

from django.conf import settings
from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    RuntimeInconsistency,
)

from . import znodes

# Conditional writes met by another writer in between are read and tried again this often.
MAX_ATTEMPTS = 20
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


def config_notification(entity_path: str) -> tuple[str, bytes]:
    """The sequential node (path prefix, data) telling brokers to re-read one entity
    (they child-watch ``/config/changes``)."""
    return (f"{znodes.CHANGES_ZNODE}/{znodes.CHANGE_PREFIX}",
            znodes.change_notification(entity_path))


def acl_notification(resource: tuple[str, str, str]) -> tuple[str, bytes]:
    """The sequential node (path prefix, data) telling brokers to reload the ACLs of one
    resource (they child-watch ``/acls/changes``)."""
    return (f"{znodes.ACL_CHANGES_ZNODE}/{znodes.ACL_CHANGE_PREFIX}",
            znodes.acl_change_notification(*resource))


def notify_change(zk: KazooClient, entity_path: str) -> None:
    """Announce one entity alone (its node unchanged: brokers re-read it anyway)."""
    zk.create(*config_notification(entity_path), sequence=True, makepath=True)


def notify_acl_change(zk: KazooClient, resource: tuple[str, str, str]) -> None:
    """Announce one resource's ACLs alone (its node unchanged)."""
    zk.create(*acl_notification(resource), sequence=True, makepath=True)


def announced(zk: KazooClient, transaction: TransactionRequest,
              notification: tuple[str, bytes]) -> bool:
    """Commit ``transaction`` (writes conditional on what was just read) with the change
    notification that announces them, as one: False when a condition failed (another
    writer came in between: read again and retry).  As two writes, a connection lost
    between them left a change stored but never announced, and a retry then found
    nothing left to change."""
    zk.ensure_path(notification[0].rsplit("/", 1)[0])
    transaction.create(*notification, sequence=True)
    results = transaction.commit()
    failed = [r for r in results if isinstance(r, Exception)
              and not isinstance(r, RolledBackError | RuntimeInconsistency)]
    if not failed:
        return True
    if isinstance(failed[0], BadVersionError | NodeExistsError | NoNodeError | NotEmptyError):
        return False
    raise failed[0]


def put_config(zk: KazooClient, entity_path: str, config: dict[str, str] | None) -> bool:
    """Publish one entity's config (None = remove it) and notify brokers when it changed.

    The node and its change notification are one transaction (:func:`announced`),
    conditional on what was read.  A users/<u> node that still has per-client children
    is emptied rather than deleted, as Kafka does.
    """
    path = znodes.config_znode(entity_path)
    for _ in range(MAX_ATTEMPTS):
        try:
            data, stat = zk.get(path)
        except NoNodeError:
            data, stat = None, None
        if config is not None:
            wanted: bytes | None = znodes.config_payload(config)
        elif stat is not None and stat.numChildren:
            wanted = znodes.config_payload({})
        else:
            wanted = None
        if wanted == (None if stat is None else bytes(data or b"")):
            return False
        transaction = zk.transaction()
        if wanted is None:
            transaction.delete(path, version=stat.version)
        elif stat is None:
            zk.ensure_path(path.rsplit("/", 1)[0])
            transaction.create(path, wanted)
        else:
            transaction.set_data(path, wanted, version=stat.version)
        if announced(zk, transaction, config_notification(entity_path)):
            return True
    raise RuntimeError(f"{path} kept changing under the control plane's write")


def close_all() -> None:
    """Stop every cached client (process shutdown, or a test leaving its chroot)."""
    with _lock:
        while _clients:
            _, zk = _clients.popitem()
            zk.stop()
            zk.close()
