"""Watches of the client-quota znodes, feeding the broker's quota configuration.

What is read (paths below the chroot; Kafka's own formats, written by the control plane):

* ``/config/users/<u>`` — the user level (and ``<default>``); its bytes come from the
  :class:`~brokerd.coordination.security_watch.SecurityWatch`, which already watches every
  child of ``/config/users`` (API keys and quota users share that directory, as in Kafka);
* ``/config/users/<u>/clients/<c>`` — one children watch per user that has a ``clients``
  node, one data watch per client entity;
* ``/config/clients/<c>`` — a children watch on ``/config/clients``, one data watch per child;
* ``/tenants/<slug>`` — the plan's ``quota_defaults`` map, also delivered by the security
  watch;
* ``/config/changes`` notifications naming ``users/<u>/clients/<c>`` or ``clients/<c>``
  (forwarded by the security watch, which owns that children watch): the named node is
  re-read.  This is how a ``clients`` node created under a user that had none is found,
  since ZooKeeper cannot watch a node that does not exist yet.

Every delivery is posted to the loop thread as ``(entity_path, config map or None)`` where
``entity_path`` is Kafka's (``users/acme.orders/clients/app-1``, names URL-encoded) and the
map is the znode JSON's ``"config"``; a node that vanished or does not parse is None (no
quota).  Parsing the quota values themselves is the quota package's job, on the loop side.

Session loss: kazoo's recipes re-read their nodes when a new session starts, delivering
current data (None for nodes deleted meanwhile), so no separate full reload is needed.

Threading as in the security watch: kazoo callbacks only post or submit; reads run on the
coordinator's worker thread.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping
from typing import Protocol

from kazoo.client import KazooClient

from brokerd.coordination.reconnect import until_reconnected
from brokerd.coordination.security_watch import USERS, Post, SecurityWatch, Submit

log = logging.getLogger(__name__)

CLIENTS = "/config/clients"
CLIENTS_SEGMENT = "clients"


class QuotaEvents(Protocol):
    """The broker-side sink; every method is called on the asyncio loop thread."""

    def quota_entity_changed(self, entity_path: str,
                             config: Mapping[str, object] | None) -> None: ...

    def tenant_quota_defaults_changed(self, slug: str,
                                      quota_defaults: Mapping[str, object] | None) -> None: ...


def config_map(data: bytes | None) -> dict[str, object] | None:
    """The ``"config"`` map of an entity znode (``{"version":1,"config":{…}}``); None when
    the node is gone or is not such JSON (fail open: a broken quota node limits nobody)."""
    return _json_map(data, "config")


class QuotaWatch:
    """The security watch's :class:`~brokerd.coordination.security_watch.ConfigHook` for
    quotas, plus its own watches of the client levels.  Start once, on the worker thread."""

    def __init__(self, client: KazooClient, events: QuotaEvents, post: Post,
                 submit: Submit) -> None:
        self._client = client
        self._events = events
        self._post = post
        self._submit = submit
        self._nodes: SecurityWatch | None = None
        self._clients_watches: set[str] = set()  # /config/users/<u>/clients being watched

    def start(self, nodes: SecurityWatch) -> None:
        """Begin watching; ``nodes`` is the started security watch whose node helpers (one
        watch per path, dropped on deletion) this reuses.  Users' ``clients`` nodes are
        found through :meth:`user_node`, which the security watch calls for every user."""
        self._nodes = nodes
        until_reconnected()(self._client.ensure_path, CLIENTS)
        nodes.watch_children(CLIENTS, lambda client_id: self._entity_node(
            f"{CLIENTS_SEGMENT}/{client_id}"))

    # ---- ConfigHook ---------------------------------------------------------------------

    def user_node(self, quoted_user: str, data: bytes | None) -> None:
        self._post(self._events.quota_entity_changed, f"users/{quoted_user}", config_map(data))
        if data is None:
            self._clients_watches.discard(f"{USERS}/{quoted_user}/{CLIENTS_SEGMENT}")
        else:
            self._submit(self._user_clients, quoted_user)

    def tenant_node(self, slug: str, data: bytes | None) -> None:
        self._post(self._events.tenant_quota_defaults_changed, slug,
                   _json_map(data, "quota_defaults"))

    def config_changed(self, entity_path: str) -> None:
        """A notification on the worker thread; users/<u> alone is the user hook's."""
        parts = entity_path.strip("/").split("/")
        is_user_client = len(parts) == 4 and parts[0] == "users" and parts[2] == CLIENTS_SEGMENT
        is_client = len(parts) == 2 and parts[0] == CLIENTS_SEGMENT
        if not (is_user_client or is_client):
            return
        assert self._nodes is not None
        self._post(self._events.quota_entity_changed, entity_path,
                   config_map(self._nodes.reread(f"/config/{entity_path}")))
        if is_user_client:
            self._user_clients(parts[1])
        self._entity_node(entity_path)

    # ---- watches (worker thread) --------------------------------------------------------

    def _user_clients(self, quoted_user: str) -> None:
        """Watch ``/config/users/<u>/clients`` if it exists (notifications catch it later)."""
        parent = f"{USERS}/{quoted_user}/{CLIENTS_SEGMENT}"
        if parent in self._clients_watches or self._client.exists(parent) is None:
            return
        assert self._nodes is not None
        self._clients_watches.add(parent)
        prefix = f"users/{quoted_user}/{CLIENTS_SEGMENT}"
        self._nodes.watch_children(parent, lambda client_id: self._entity_node(
            f"{prefix}/{client_id}"))

    def _entity_node(self, entity_path: str) -> None:
        assert self._nodes is not None
        self._nodes.watch_node(f"/config/{entity_path}", functools.partial(
            self._deliver, entity_path))

    def _deliver(self, entity_path: str, data: bytes | None) -> None:
        self._post(self._events.quota_entity_changed, entity_path, config_map(data))


def _json_map(data: bytes | None, key: str) -> dict[str, object] | None:
    if data is None:
        return None
    try:
        value = json.loads(data).get(key)
    except (ValueError, UnicodeDecodeError, AttributeError):
        log.warning("ignoring a quota node that is not JSON: %r", data[:200])
        return None
    return value if isinstance(value, dict) else None
