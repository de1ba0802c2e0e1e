"""Watches of the security znodes: API-key credentials, ACLs and tenant plans.

What is watched (paths below the chroot; formats in ``docs/control-plane.md``):

* ``/config/users/<api-key>`` — one data watch per key (credentials, principal, tenant);
* ``/acls/<literal|prefixed>/<ResourceType>/<url-encoded name>`` — one data watch per
  resource pattern, found through child watches on the two levels above;
* ``/tenants/<slug>`` — one data watch per tenant (its ``max_partitions``);
* ``/config/changes/config_change_<seq>`` (``{"version":2,"entity_path":"users/<key>"}``) and
  ``/acls/changes/acl_changes_<seq>`` (``{"resourceType":…,"name":…,"patternType":…}``) —
  Kafka's change notifications; each new one re-reads the node it names.

Why both watches and notifications: a data watch alone delivers every change within
milliseconds, but Kafka's protocol is the notification, and the control plane writes it
after every change; re-reading on a notification costs one ``get`` and repairs any change a
watch could have missed (e.g. around a session loss, before kazoo re-arms its recipes).

Threading: kazoo calls the recipes' callbacks on its own thread.  Child-watch callbacks do
no ZooKeeper I/O there: they hand the work to the coordinator's single worker thread
(``submit``), like every other ZooKeeper task of the broker.  Nothing here touches broker
state: raw bytes are posted to the loop thread (``post``), where the
:class:`SecurityEvents` sink parses them.  A znode that vanished is posted as ``None``.
This module does not parse credentials or ACLs: that is the pure security package's job.

Other readers of the same znodes (the quota watch: ``/config/users/<u>`` also holds user
quotas, ``/tenants/<slug>`` the plan's quota defaults, ``/config/changes`` names quota
entities) subscribe through a :class:`ConfigHook` instead of watching these nodes again.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import quote, unquote

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from brokerd.coordination.reconnect import until_reconnected

log = logging.getLogger(__name__)

USERS = "/config/users"
CONFIG_CHANGES = "/config/changes"
ACLS = "/acls"
ACL_CHANGES = "/acls/changes"
# Kafka's ZkNodeChangeNotificationListener default: notifications live 15 minutes.
CHANGE_EXPIRATION_MS = 15 * 60 * 1000
ACL_PATTERN_TYPES = ("literal", "prefixed")
TENANTS = "/tenants"
USERS_ENTITY_PREFIX = "users/"

Post = Callable[..., None]
Submit = Callable[..., None]


class SecurityEvents(Protocol):
    """The broker-side sink; every method is called on the asyncio loop thread."""

    def user_changed(self, api_key: str, data: bytes | None) -> None: ...

    def acl_changed(self, pattern_type: str, resource_type: str, quoted_name: str,
                    data: bytes | None) -> None: ...

    def tenant_changed(self, slug: str, data: bytes | None) -> None: ...


class ConfigHook(Protocol):
    """Another consumer of the nodes this watch reads; called on kazoo's or the worker thread.

    It receives raw bytes (None: the node is gone) and must not block: post or submit.
    """

    def user_node(self, quoted_user: str, data: bytes | None) -> None: ...

    def tenant_node(self, slug: str, data: bytes | None) -> None: ...

    def config_changed(self, entity_path: str) -> None: ...


class SecurityWatch:
    """Keeps the sink in step with ZooKeeper; start once, on the ZooKeeper worker thread."""

    def __init__(self, client: KazooClient, events: SecurityEvents, post: Post,
                 submit: Submit, hook: ConfigHook | None = None) -> None:
        self._client = client
        self._events = events
        self._hook = hook
        self._post = post
        self._submit = submit
        self._data_watches: set[str] = set()  # paths with a live DataWatch
        self._type_watches: set[str] = set()  # /acls/<pattern>/<type> with a ChildrenWatch
        # Notifications handled, with their creation time (ZooKeeper's ctime, ms).
        self._seen_changes: dict[str, dict[str, int]] = {CONFIG_CHANGES: {}, ACL_CHANGES: {}}

    def start(self) -> None:
        until_reconnected()(self._prepare)
        self.watch_children(USERS, self._user_node)
        self.watch_children(TENANTS, self._tenant_node)
        for pattern in ACL_PATTERN_TYPES:
            self.watch_children(f"{ACLS}/{pattern}", functools.partial(self._acl_type, pattern))
        ChildrenWatch(self._client, CONFIG_CHANGES,
                      lambda children: self._submit(self._on_config_changes, children))
        ChildrenWatch(self._client, ACL_CHANGES,
                      lambda children: self._submit(self._on_acl_changes, children))

    def _prepare(self) -> None:
        """Create the watched paths and note the notifications present at start: they are
        history, as everything is read afresh by the watches."""
        for path in (USERS, CONFIG_CHANGES, ACL_CHANGES, TENANTS,
                     *(f"{ACLS}/{pattern}" for pattern in ACL_PATTERN_TYPES)):
            self._client.ensure_path(path)
        for path, seen in self._seen_changes.items():
            for child in self._client.get_children(path):
                stat = self._client.exists(f"{path}/{child}")
                if stat is not None:
                    seen[child] = int(stat.ctime)

    # ---- data watches -------------------------------------------------------------------

    def watch_children(self, parent: str, on_node: Callable[[str], None]) -> None:
        """Call ``on_node(child)`` (on the worker thread) for every child, now and later.

        ``parent`` must exist: kazoo ends a children watch whose node is missing."""
        def on_children(children: list[str]) -> None:
            for child in children:
                self._submit(on_node, child)
        ChildrenWatch(self._client, parent, on_children)

    def watch_node(self, path: str, deliver: Callable[[bytes | None], None]) -> None:
        """One DataWatch per existing node, until the node is deleted."""
        if path in self._data_watches:
            return
        self._data_watches.add(path)

        def on_data(data: bytes | None, stat: Any) -> bool | None:
            deliver(data if stat is not None else None)
            if stat is None:
                self._data_watches.discard(path)
                return False  # stop; a re-created node is found by its parent's watch
            return None

        DataWatch(self._client, path, on_data)

    def _user_node(self, api_key: str) -> None:
        self.watch_node(f"{USERS}/{api_key}", functools.partial(self._deliver_user, api_key))

    def _deliver_user(self, quoted_key: str, data: bytes | None) -> None:
        self._post(self._events.user_changed, unquote(quoted_key), data)
        if self._hook is not None:
            self._hook.user_node(quoted_key, data)

    def _tenant_node(self, slug: str) -> None:
        def deliver(data: bytes | None) -> None:
            self._post(self._events.tenant_changed, slug, data)
            if self._hook is not None:
                self._hook.tenant_node(slug, data)
        self.watch_node(f"{TENANTS}/{slug}", deliver)

    def _acl_type(self, pattern: str, resource_type: str) -> None:
        path = f"{ACLS}/{pattern}/{resource_type}"
        if path not in self._type_watches:
            self._type_watches.add(path)
            self.watch_children(path, lambda name: self._acl_node(pattern, resource_type, name))

    def _acl_node(self, pattern: str, resource_type: str, quoted_name: str) -> None:
        self.watch_node(f"{ACLS}/{pattern}/{resource_type}/{quoted_name}", lambda data: self._post(
            self._events.acl_changed, pattern, resource_type, quoted_name, data))

    # ---- change notifications -----------------------------------------------------------

    def _new_changes(self, parent: str, children: list[str]) -> list[bytes]:
        """Payloads of notifications not handled before, oldest first; then the purge of
        notifications older than ``CHANGE_EXPIRATION_MS`` (Kafka's rule: every reader
        purges, so the list stays short however many changes are made)."""
        seen = self._seen_changes[parent]
        payloads = []
        for child in sorted(set(children) - seen.keys()):
            try:
                data, stat = self._client.get(f"{parent}/{child}")
            except NoNodeError:
                continue  # purged already; the data watch has delivered the change
            seen[child] = int(stat.ctime)
            payloads.append(data)
        for child in set(seen) - set(children):
            del seen[child]  # purged by someone
        self._purge_expired(parent, seen)
        return payloads

    def _purge_expired(self, parent: str, seen: dict[str, int]) -> None:
        expired_before = int(time.time() * 1000) - CHANGE_EXPIRATION_MS
        for child, created in list(seen.items()):
            if created < expired_before:
                with contextlib.suppress(NoNodeError):  # another reader purged it first
                    self._client.delete(f"{parent}/{child}")
                del seen[child]

    def reread(self, path: str) -> bytes | None:
        """The node's current bytes, None if it does not exist (worker thread)."""
        try:
            data: bytes = self._client.get(path)[0]
        except NoNodeError:
            return None
        return data

    def _on_config_changes(self, children: list[str]) -> None:
        for payload in self._new_changes(CONFIG_CHANGES, children):
            entity = _json_field(payload, "entity_path")
            if entity is not None and self._hook is not None:
                self._hook.config_changed(entity)
            if entity is None or not entity.startswith(USERS_ENTITY_PREFIX):
                continue
            quoted_key = entity[len(USERS_ENTITY_PREFIX):]
            if "/" in quoted_key:
                continue  # users/<u>/clients/<c>: a quota, not credentials
            self._deliver_user(quoted_key, self.reread(f"{USERS}/{quoted_key}"))
            self._user_node(quoted_key)

    def _on_acl_changes(self, children: list[str]) -> None:
        for payload in self._new_changes(ACL_CHANGES, children):
            resource_type = _json_field(payload, "resourceType")
            name = _json_field(payload, "name")
            pattern = (_json_field(payload, "patternType") or "").lower()
            if resource_type is None or name is None or pattern not in ACL_PATTERN_TYPES:
                log.warning("ignoring malformed ACL change notification %r", payload[:200])
                continue
            quoted = quote(name, safe="")
            self._post(self._events.acl_changed, pattern, resource_type, quoted,
                       self.reread(f"{ACLS}/{pattern}/{resource_type}/{quoted}"))


def _json_field(payload: bytes, key: str) -> str | None:
    try:
        value = json.loads(payload).get(key)
    except (ValueError, UnicodeDecodeError, AttributeError):
        return None
    return value if isinstance(value, str) else None
