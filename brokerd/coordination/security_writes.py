"""Conditional read-modify-write of one security znode, then Kafka's change notification.

What the admin APIs write (CreateAcls/DeleteAcls: ``/acls/<pattern>/<Type>/<name>``;
AlterUserScramCredentials: ``/config/users/<user>``) is one znode the control plane writes
too, so every write here is conditional on the version read (``BadVersion``/``NodeExists``/
``NoNode`` -> re-read and retry), exactly like Kafka's ZooKeeper ``AclAuthorizer`` and
``AdminZkClient``: two writers never lose each other's rules.  After a write that changed
something, a sequential notification (``/acls/changes/acl_changes_`` or
``/config/changes/config_change_``) tells every broker and the control plane to re-read the
node.  The content is opaque here (``change`` maps old bytes to new bytes, None: absent),
as this layer does not parse security data.  Runs on the coordinator's ZooKeeper thread.
"""

from __future__ import annotations

from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

Change = Callable[[bytes | None], bytes | None]


def update_node(client: KazooClient, path: str, change: Change, notification_path: str,
                notification: bytes) -> tuple[bytes | None, bytes | None]:
    """Apply ``change`` to the node at ``path`` until no other writer interferes; returns
    (bytes before, bytes after).  ``change`` may raise to abandon the write; it may be
    called more than once.  None deletes the node (ACL nodes are leaves; user config nodes
    are emptied rather than deleted, as Kafka does, so callers never ask that for them)."""
    while True:
        try:
            data, stat = client.get(path)
            current: bytes | None = bytes(data)
        except NoNodeError:
            current, stat = None, None
        wanted = change(current)
        if wanted == current:
            return current, wanted
        try:
            if wanted is None:
                assert stat is not None
                client.delete(path, version=stat.version)
            elif stat is None:
                client.create(path, wanted, makepath=True)
            else:
                client.set(path, wanted, version=stat.version)
        except (BadVersionError, NodeExistsError, NoNodeError):
            continue
        client.create(notification_path, notification, sequence=True, makepath=True)
        return current, wanted
