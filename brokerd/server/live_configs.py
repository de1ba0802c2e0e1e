"""The dynamic broker configs this broker holds (``/config/brokers/<default>`` and
``/config/brokers/<id>``, fed by the ZooKeeper watch) and their live application.

On every change: the topic-level defaults in force (``retention.ms`` from
``log.retention.*``, ``max.message.bytes`` from ``message.max.bytes``, …) are recomputed and
pushed to every hosted log whose topic does not override them,
``follower.replication.throttled.rate`` and ``leader.replication.throttled.rate`` reset the
follower fetch throttle and the leader's (:mod:`brokerd.replication.leader_throttle`), and
``log.cleaner.threads`` resizes the cleaner pool.  A key that
does not validate (written by hand into ZooKeeper: not dynamic, a bad value, a log default no
log could use) is logged and left out, and the rest of its layer applies, as Kafka's
DynamicBrokerConfig drops only the invalid keys of a persisted update.

Not thread-safe: the loop thread only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from brokerd.server import broker_configs as rules
from brokerd.storage import LogConfig

if TYPE_CHECKING:
    from brokerd.server.context import HandlerContext

log = logging.getLogger(__name__)

THROTTLED_RATE_KEY = "follower.replication.throttled.rate"
LEADER_THROTTLED_RATE_KEY = "leader.replication.throttled.rate"
CLEANER_THREADS_KEY = "log.cleaner.threads"


def valid_keys(layer: dict[str, str], static: dict[str, str], other_layer: dict[str, str],
               which: str) -> dict[str, str]:
    """The keys of ``layer`` that validate, each checked together with those kept before it
    (sorted, so the outcome does not depend on ZooKeeper's key order); the others are
    logged and dropped."""
    kept: dict[str, str] = {}
    for name in sorted(layer):
        candidate = {**kept, name: layer[name]}
        try:
            rules.validate_layer(candidate, static, other_layer)
        except rules.InvalidBrokerConfig as exc:
            log.warning("ignoring dynamic broker config %s=%r (%s layer): %s", name,
                        layer[name], which, exc)
            continue
        kept = candidate
    return kept


class LiveBrokerConfigs:
    """The two dynamic layers and what they changed on this broker."""

    def __init__(self, broker: HandlerContext) -> None:
        self._broker = broker
        self.default_layer: dict[str, str] = {}
        self.own_layer: dict[str, str] = {}
        # the cleaner pool's resize (``CleanerLoop.set_threads``) once it runs
        self.on_cleaner_threads: Callable[[int], None] | None = None

    @property
    def static(self) -> dict[str, str]:
        return dict(self._broker.config.static_props)

    @property
    def cleaner_threads(self) -> int:
        """``log.cleaner.threads`` in force (per-broker over default over static)."""
        return int(rules.effective_props(self.static, self.default_layer, self.own_layer)
                   .get(CLEANER_THREADS_KEY, "1"))

    def changed(self, default_layer: dict[str, str], own_layer: dict[str, str]) -> None:
        default_layer = valid_keys(default_layer, self.static, {}, "<default>")
        own_layer = valid_keys(own_layer, self.static, default_layer, "per-broker")
        self.default_layer, self.own_layer = default_layer, own_layer
        self._apply_log_defaults()
        self._apply_throttle()
        if self.on_cleaner_threads is not None:
            self.on_cleaner_threads(self.cleaner_threads)

    def _apply_log_defaults(self) -> None:
        broker = self._broker
        defaults = LogConfig.from_props(rules.effective_log_defaults(
            self.static, self.default_layer, self.own_layer))
        if defaults == broker.default_log_config:
            return
        broker.default_log_config = defaults
        for name, metadata in broker.cache.topics.items():
            broker.replicas.update_config(name, broker.log_config_for(metadata.config))
        log.info("log defaults now %s", {key: value for key, value in defaults.to_props().items()
                                         if value != LogConfig().to_props().get(key)})

    def _apply_throttle(self) -> None:
        now = time.monotonic()
        replicas = self._broker.replicas
        replicas.fetchers.throttle.set_rate(self._rate(THROTTLED_RATE_KEY), now)
        replicas.leader_throttle.limit.set_rate(self._rate(LEADER_THROTTLED_RATE_KEY), now)

    def _rate(self, key: str) -> float:
        rate = float({**self.default_layer, **self.own_layer}.get(key, "0"))
        return 0.0 if rate >= float(rules.LONG_MAX) else rate  # Long.MAX_VALUE: Kafka's "no limit"
