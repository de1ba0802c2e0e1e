"""Conditional read-modify-write of one security znode, then Kafka's change notification.

What the admin APIs write (CreateAcls/DeleteAcls: ``/acls/<pattern>/<Type>/<name>``;
AlterUserScramCredentials: ``/config/users/<user>``) is one znode the control plane writes
too, so every write here is conditional on the version read (``BadVersion``/``NodeExists``/
``NoNode`` -> re-read and retry), exactly like Kafka's ZooKeeper ``AclAuthorizer`` and
``AdminZkClient``: two writers never lose each other's rules.  A write that changes
something carries, in the same transaction, a sequential notification
(``/acls/changes/acl_changes_`` or ``/config/changes/config_change_``) that tells every
broker and the control plane to re-read the node.  The content is opaque here
(``change`` maps old bytes to new bytes, None: absent), as this layer does not parse
security data.  Runs on the coordinator's ZooKeeper thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, ConnectionLoss, NodeExistsError, NoNodeError

from brokerd.coordination.writes import failed_op

Change = Callable[[bytes | None], bytes | None]


def update_node(client: KazooClient, path: str, change: Change, notification_path: str,
                notification: bytes, deadline_s: float) -> tuple[bytes | None, bytes | None]:
    """Apply ``change`` to the node at ``path`` until no other writer interferes; returns
    (bytes before, bytes after).  ``change`` may raise to abandon the write; it may be
    called more than once.  None deletes the node (ACL nodes are leaves; user config nodes
    are emptied rather than deleted, as Kafka does, so callers never ask that for them).

    The node and its notification are written in one transaction, so a connection lost
    between them cannot leave a change unannounced.  A write cut short by a blip is
    repeated once the connection is back, for up to ``deadline_s`` (as Kafka's
    ZooKeeperClient re-sends); if the node then holds what that write wanted, the write
    took effect with its answer lost, and its outcome is returned without asking
    ``change`` again (which would find nothing left to do: DeleteAcls would report no
    binding deleted)."""
    lost: tuple[bytes | None, bytes | None] | None = None
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            current, version = _read(client, path)
            if lost is not None and current == lost[1]:
                return lost
            lost = None
            wanted = change(current)
            if wanted == current:
                return current, wanted
            for parent in (path, notification_path) if version is None else (notification_path,):
                client.ensure_path(parent.rsplit("/", 1)[0])
            transaction = client.transaction()
            if wanted is None:
                transaction.delete(path, version)
            elif version is None:
                transaction.create(path, wanted)
            else:
                transaction.set_data(path, wanted, version)
            transaction.create(notification_path, notification, sequence=True)
            lost = current, wanted
            results = transaction.commit()
        except ConnectionLoss:
            if time.monotonic() > deadline:
                raise
            continue  # reconnecting: the next request waits for the connection
        failed = failed_op(results)
        if failed is None:
            return current, wanted
        if not isinstance(results[failed], BadVersionError | NodeExistsError | NoNodeError):
            raise results[failed]  # (not a race: trying again would fail the same way)
        lost = None  # another writer got there first


def _read(client: KazooClient, path: str) -> tuple[bytes | None, int | None]:
    """The node's bytes and version; (None, None) when it does not exist."""
    try:
        data, stat = client.get(path)
    except NoNodeError:
        return None, None
    return bytes(data), stat.version
