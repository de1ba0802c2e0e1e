"""Watches of the admin-request znodes and of this broker's dynamic config.

What is watched (paths below the chroot; Kafka's formats, see :mod:`.znodes`):

* ``/admin/reassign_partitions`` and ``/admin/preferred_replica_election`` — requests
  handed to the controller's ``reassign`` and ``elect_preferred``, which act only while
  this broker is the active controller (a new controller reads pending requests itself);
* ``/config/brokers/<default>`` and ``/config/brokers/<this id>`` — the two dynamic
  config layers, posted to the broker together whenever either changes.

Why apart from :mod:`brokerd.coordination.zk`: these watches only pass on what a node
holds.  They take no part in the session's life (registration, election, the topic
cache), and kazoo's recipes re-read their nodes when a new session starts, so the
coordinator only has to start them and pass in where their data goes.

Threading as in the security watch: kazoo callbacks only submit; decoding and the
controller's work run on the coordinator's worker thread (``submit``), and the config
layers reach the loop thread through ``post``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.recipe.watchers import DataWatch

from brokerd.coordination import znodes
from brokerd.coordination.security_watch import Post, Submit

log = logging.getLogger(__name__)

Handle = Callable[[list[znodes.PartitionRequest]], object]


def watch_admin_requests(client: KazooClient, submit: Submit, reassign: Handle,
                         elect_preferred: Handle) -> None:
    """Hand reassignment and preferred-leader election requests to the controller on the
    worker thread.  Call on the worker thread."""
    def on_reassign(data: bytes | None, stat: Any) -> None:
        if data:
            submit(_requests_sync, reassign, data)

    def on_preferred(data: bytes | None, stat: Any) -> None:
        if stat is not None:
            submit(_requests_sync, elect_preferred, data)

    DataWatch(client, znodes.REASSIGN_PARTITIONS, on_reassign)
    DataWatch(client, znodes.PREFERRED_ELECTION, on_preferred)


def _requests_sync(handle: Handle, data: bytes | None) -> None:
    """Worker thread: an unreadable node is logged and skipped (its next write fires the
    watch again)."""
    try:
        requests = znodes.decode_partition_requests(data)
    except znodes.ZnodeFormatError:
        log.exception("ignoring unreadable admin request")
        return
    handle(requests)


class BrokerConfigWatch:
    """Both dynamic config layers, kept so that a change to one posts it with the other:
    the broker resolves each value across both, the per-broker layer over the default
    (see :mod:`brokerd.server.live_configs`).  Start once, on the worker thread."""

    def __init__(self, client: KazooClient, broker_id: int,
                 changed: Callable[[dict[str, str], dict[str, str]], None],
                 post: Post, submit: Submit) -> None:
        """``changed(default, own)`` is posted to the loop thread at start and on every
        change."""
        self._client = client
        self._own = str(broker_id)
        self._changed = changed
        self._post = post
        self._submit = submit
        self._layers: dict[str, dict[str, str]] = {}  # entity -> config (worker thread)

    def start(self) -> None:
        for entity in (znodes.DEFAULT_BROKER_CONFIG, self._own):
            DataWatch(self._client, znodes.broker_config_path(entity),
                      functools.partial(self._on_change, entity))

    def _on_change(self, entity: str, data: bytes | None, stat: Any) -> None:
        self._submit(self._broker_config_sync, entity, data)

    def _broker_config_sync(self, entity: str, data: bytes | None) -> None:
        self._layers[entity] = znodes.decode_topic_config(data)
        self._post(self._changed,
                   dict(self._layers.get(znodes.DEFAULT_BROKER_CONFIG, {})),
                   dict(self._layers.get(self._own, {})))
