"""A broker's three quota managers and Kafka's rules for combining them per API.

Why a facade: which quotas a request is charged to, when a value is taken back and how two
throttles combine are quota rules, not networking; keeping them here lets the handlers make
one call each and lets these rules be tested in milliseconds.  The rules follow Kafka's
``KafkaApis``:

* Produce: request bytes are charged to ``producer_byte_rate``; handling time to
  ``request_percentage`` except for ``acks=0`` (no response to carry a throttle, Kafka exempts
  it).  The data is written either way.
* Fetch: the response size is capped first (``fetch_max_bytes``: what the quota still
  allows, so a consumer is paced rather than answered empty); the response bytes are
  charged to ``consumer_byte_rate`` and handling time to ``request_percentage``; if either
  throttles, the fetch is answered empty and its bytes are taken back (the client never got
  them).  An entity already over its fetch quota is answered empty before the log is read.
* Every other API: handling time to ``request_percentage``.

Handling time is the time the request occupied the handler (excluding long-poll waits); its
unit on the quota is percent of one thread: ``ms x 100 / 1000`` per request, summed per second.
Replica (follower) fetches are exempt from all client quotas: do not call these for them.
"""

from __future__ import annotations

from .manager import DEFAULT_IDLE_EXPIRY_MS, EntityMetrics, QuotaManager
from .rate import QuotaWindow
from .resolution import QuotaConfigStore, QuotaType, TenantQuotaDefaults
from .throttle import combined_throttle_ms


def request_time_percentage(handler_time_ms: float) -> float:
    """Handler time in the request quota's unit: percent-seconds of one thread (ms / 10)."""
    return handler_time_ms * 100.0 / 1000.0


class BrokerQuotas:
    """Produce, fetch and request quota managers over one :class:`QuotaConfigStore`.

    Every method takes the connection's ``user`` (its principal's Kafka user name),
    ``client_id`` (from the request header) and ``tenant_defaults`` (its tenant's plan, None
    outside tenants).  Throttles are in ms; a positive one goes into the response's
    ``throttle_time_ms`` and the connection is then muted for that long (KIP-219).
    """

    def __init__(self, store: QuotaConfigStore, window: QuotaWindow | None = None,
                 idle_expiry_ms: int = DEFAULT_IDLE_EXPIRY_MS) -> None:
        self.store = store
        self.produce = QuotaManager(QuotaType.PRODUCE, store, window, idle_expiry_ms)
        self.fetch = QuotaManager(QuotaType.FETCH, store, window, idle_expiry_ms)
        self.request = QuotaManager(QuotaType.REQUEST, store, window, idle_expiry_ms)

    def produce_throttle_ms(self, user: str, client_id: str,
                            tenant_defaults: TenantQuotaDefaults | None, *, request_bytes: int,
                            acks: int, handler_time_ms: float, now_ms: int) -> int:
        """Charge one produce request; for ``acks=0`` a positive result means mute only."""
        bytes_throttle = self.produce.record_and_get_throttle_ms(
            user, client_id, tenant_defaults, request_bytes, now_ms)
        if acks == 0:
            return bytes_throttle
        request_throttle = self.request.record_and_get_throttle_ms(
            user, client_id, tenant_defaults, request_time_percentage(handler_time_ms), now_ms)
        return combined_throttle_ms(bytes_throttle, request_throttle)

    def fetch_max_bytes(self, user: str, client_id: str,
                        tenant_defaults: TenantQuotaDefaults | None, now_ms: int) -> int | None:
        """Upper bound for the fetch's response bytes (min with the request's max_bytes and
        the broker's own limit): what the fetch quota still allows now; None when it is
        unlimited."""
        return self.fetch.max_value_in_window(user, client_id, tenant_defaults, now_ms)

    def fetch_throttle_before_read(self, user: str, client_id: str,
                                   tenant_defaults: TenantQuotaDefaults | None,
                                   now_ms: int) -> int:
        """Positive when the entity is already over its fetch quota: answer empty with this
        throttle without reading the log; nothing is recorded."""
        return self.fetch.current_throttle_ms(user, client_id, tenant_defaults, now_ms)

    def fetch_throttle_ms(self, user: str, client_id: str,
                          tenant_defaults: TenantQuotaDefaults | None, *, response_bytes: int,
                          handler_time_ms: float, now_ms: int) -> int:
        """Charge a fetch whose response would carry ``response_bytes``.

        0: send the response.  Positive: send an *empty* response with this throttle; the
        bytes have been taken back, so only delivered bytes ever count.
        """
        bytes_throttle = self.fetch.record_and_get_throttle_ms(
            user, client_id, tenant_defaults, response_bytes, now_ms)
        request_throttle = self.request.record_and_get_throttle_ms(
            user, client_id, tenant_defaults, request_time_percentage(handler_time_ms), now_ms)
        throttle = combined_throttle_ms(bytes_throttle, request_throttle)
        if throttle > 0:
            self.fetch.unrecord(user, client_id, tenant_defaults, response_bytes, now_ms)
        return throttle

    def request_throttle_ms(self, user: str, client_id: str,
                            tenant_defaults: TenantQuotaDefaults | None, *,
                            handler_time_ms: float, now_ms: int) -> int:
        """Charge any other request's handling time to the request quota."""
        return self.request.record_and_get_throttle_ms(
            user, client_id, tenant_defaults, request_time_percentage(handler_time_ms), now_ms)

    def expire_idle(self, now_ms: int) -> int:
        """Drop idle sensors of all three managers (also done lazily while recording)."""
        return sum(manager.expire_idle(now_ms)
                   for manager in (self.produce, self.fetch, self.request))

    def snapshot(self, now_ms: int) -> list[EntityMetrics]:
        """Metrics of every live entity of every quota type, for the Prometheus probe."""
        return [metrics for manager in (self.produce, self.fetch, self.request)
                for metrics in manager.snapshot(now_ms)]
