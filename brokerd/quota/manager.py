"""One quota type's bookkeeping: a rate sensor per quota entity, throttles, expiry, metrics.

Mirrors Kafka's ``ClientQuotaManager`` (one instance per type: produce, fetch, request) without
its threads and locks: the caller passes ``now_ms`` and acts on the returned throttle (puts it
in the response and mutes the connection).  Each call resolves the connection's quota through
the :class:`~brokerd.quota.resolution.QuotaConfigStore` (cached), so a changed override takes
effect on the very next request, and records into the sensor of the resolved entity key, so
all connections of one entity share one rate.

Not thread-safe: used from the event loop only.
"""

from __future__ import annotations

from dataclasses import dataclass

from .rate import QuotaWindow, SampledRate
from .resolution import (
    QuotaConfigStore,
    QuotaEntityKey,
    QuotaType,
    ResolvedQuota,
    TenantQuotaDefaults,
)
from .throttle import fetch_size_cap, throttle_time_ms

# Kafka purges a quota sensor after an hour without records: long enough that a client
# reconnecting after a pause keeps its history, short enough that client ids that come and
# go (one per short-lived job) do not accumulate without bound.
DEFAULT_IDLE_EXPIRY_MS = 3_600_000
# Kafka's metrics registry looks for expired sensors every 30 s.
EXPIRY_CHECK_INTERVAL_MS = 30_000


@dataclass(frozen=True)
class EntityMetrics:
    """Plain-data metrics of one quota entity, for the Prometheus probe.

    ``rate`` is bytes/s (produce, fetch) or percent of one handler thread (request), measured
    at snapshot time; the totals are counters since the sensor was created.
    """

    quota_type: QuotaType
    entity: QuotaEntityKey
    rate: float
    limit: float | None
    source: str
    throttle_time_ms_total: int
    throttled_total: int


@dataclass
class _Sensor:
    rate: SampledRate
    quota: ResolvedQuota
    last_record_ms: int
    # The connection that last recorded here, to re-resolve the quota when the
    # configuration changed (see :meth:`QuotaManager.snapshot`).
    recorded_by: tuple[str, str, TenantQuotaDefaults | None] = ("", "", None)
    throttle_time_ms_total: int = 0
    throttled_total: int = 0


class QuotaManager:
    """The sensors and throttles of one :class:`QuotaType`.

    Invariants: one sensor per :class:`QuotaEntityKey` that recorded within the idle expiry;
    a returned throttle is 0 exactly when the entity's rate (including the value just
    recorded) is within its quota or the quota is unlimited.
    """

    def __init__(self, quota_type: QuotaType, store: QuotaConfigStore,
                 window: QuotaWindow | None = None,
                 idle_expiry_ms: int = DEFAULT_IDLE_EXPIRY_MS) -> None:
        self.quota_type = quota_type
        self.window = window or QuotaWindow()
        self._store = store
        self._idle_expiry_ms = idle_expiry_ms
        # Request-time throttles are capped at one window, as Kafka's
        # ClientRequestQuotaManager does: handler time is noisy (one slow request is a big
        # spike), and a client should not be silenced for many seconds by one spike.
        self._max_throttle_ms = self.window.window_ms if quota_type is QuotaType.REQUEST else None
        self._sensors: dict[QuotaEntityKey, _Sensor] = {}
        self._last_expiry_check_ms: int | None = None

    def resolve(self, user: str, client_id: str,
                tenant_defaults: TenantQuotaDefaults | None) -> ResolvedQuota:
        return self._store.resolve(self.quota_type, user, client_id, tenant_defaults)

    def record_and_get_throttle_ms(self, user: str, client_id: str,
                                   tenant_defaults: TenantQuotaDefaults | None,
                                   value: float, now_ms: int) -> int:
        """Record ``value`` for the connection's entity and return the throttle it earned.

        The value counts even when it is throttled (a produce was written; a request was
        handled): the throttle is the time until the rate *including it* is back at the quota.
        """
        quota = self.resolve(user, client_id, tenant_defaults)
        sensor = self._sensor(quota, now_ms)
        sensor.rate.record(value, now_ms)
        sensor.last_record_ms = now_ms
        sensor.recorded_by = (user, client_id, tenant_defaults)
        return self._throttle(sensor, now_ms)

    def current_throttle_ms(self, user: str, client_id: str,
                            tenant_defaults: TenantQuotaDefaults | None, now_ms: int) -> int:
        """The throttle the entity has earned so far, recording nothing.

        For the fetch pre-check: when this is positive the fetch is answered empty at once,
        without reading the log.  An entity with no sensor has recorded nothing: 0.
        """
        quota = self.resolve(user, client_id, tenant_defaults)
        sensor = self._sensors.get(quota.entity)
        if sensor is None:
            return 0
        sensor.quota = quota
        return self._throttle(sensor, now_ms)

    def unrecord(self, user: str, client_id: str, tenant_defaults: TenantQuotaDefaults | None,
                 value: float, now_ms: int) -> None:
        """Take back a value recorded at ``now_ms`` (a fetch that will be answered empty).

        Recording ``-value`` at the same instant lands in the same sample, so the window sum
        returns to what it was before the record.
        """
        quota = self.resolve(user, client_id, tenant_defaults)
        sensor = self._sensors.get(quota.entity)
        if sensor is not None:
            sensor.rate.record(-value, now_ms)

    def max_value_in_window(self, user: str, client_id: str,
                            tenant_defaults: TenantQuotaDefaults | None,
                            now_ms: int) -> int | None:
        """The fetch size cap for the connection; None if unlimited.

        What the entity may still take without going over its quota now: the allowance
        ``T x span - S = (T - O) x span`` (the rate may reach T over the current span), at
        most Kafka's ``fetch_size_cap``.  A response within it is never throttled, so a
        consumer that fetches all it may is delivered data at its quota, in steps as small
        as its fetches, instead of being answered empty until the window empties.  0 when
        the entity is at or over its quota (the read still returns one whole batch, so even
        a tiny quota makes progress).  A cold entity's span is ``cold_start_windows``.
        """
        quota = self.resolve(user, client_id, tenant_defaults)
        if quota.limit is None:
            return None
        cap = fetch_size_cap(quota.limit, self.window.samples, self.window.window_ms / 1000.0)
        sensor = self._sensors.get(quota.entity)
        if sensor is None:
            span_s = self.window.cold_windows * self.window.window_ms / 1000.0
            return min(cap, int(quota.limit * span_s))
        span_s = sensor.rate.window_size_ms(now_ms) / 1000.0
        allowance = (quota.limit - sensor.rate.rate(now_ms)) * span_s
        return max(0, min(cap, int(allowance)))

    def expire_idle(self, now_ms: int) -> int:
        """Drop sensors with no record for longer than the idle expiry; returns how many."""
        self._last_expiry_check_ms = now_ms
        expired = [key for key, sensor in self._sensors.items()
                   if now_ms - sensor.last_record_ms > self._idle_expiry_ms]
        for key in expired:
            del self._sensors[key]
        return len(expired)

    def snapshot(self, now_ms: int) -> list[EntityMetrics]:
        """Every live entity's metrics, sorted by entity for stable output.

        Each sensor's quota is resolved again first (cached, so cheap), as Kafka updates
        its quota metrics when a config changes: a sensor whose entity no longer decides
        its connections' quota (the override was removed) reports unlimited rather than
        the old limit until it expires."""
        for key, sensor in self._sensors.items():
            current = self.resolve(*sensor.recorded_by)
            if current.entity == key:
                sensor.quota = current
            elif sensor.quota.limit is not None:
                sensor.quota = ResolvedQuota(self.quota_type, None, None, False, key)
        return [EntityMetrics(self.quota_type, key, sensor.rate.rate(now_ms), sensor.quota.limit,
                              sensor.quota.describe(), sensor.throttle_time_ms_total,
                              sensor.throttled_total)
                for key, sensor in sorted(self._sensors.items(),
                                          key=lambda item: (item[0].tenant, item[0].user,
                                                            item[0].client_id))]

    def __len__(self) -> int:
        """Number of live sensors (bounded by expiry)."""
        return len(self._sensors)

    def _sensor(self, quota: ResolvedQuota, now_ms: int) -> _Sensor:
        if (self._last_expiry_check_ms is None
                or now_ms - self._last_expiry_check_ms >= EXPIRY_CHECK_INTERVAL_MS):
            self.expire_idle(now_ms)
        sensor = self._sensors.get(quota.entity)
        if sensor is None:
            sensor = _Sensor(SampledRate(self.window), quota, now_ms)
            self._sensors[quota.entity] = sensor
        sensor.quota = quota
        return sensor

    def _throttle(self, sensor: _Sensor, now_ms: int) -> int:
        limit = sensor.quota.limit
        if limit is None:
            return 0
        observed = sensor.rate.rate(now_ms)
        throttle_ms = throttle_time_ms(observed, limit, sensor.rate.window_size_ms(now_ms))
        if self._max_throttle_ms is not None:
            throttle_ms = min(throttle_ms, self._max_throttle_ms)
        if throttle_ms > 0:
            sensor.throttle_time_ms_total += throttle_ms
            sensor.throttled_total += 1
        return throttle_ms
