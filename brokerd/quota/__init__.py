"""Pure quota math (Kafka's client quotas): entity resolution, sampled rates, throttles.

No I/O and no clock: callers pass ``now_ms``.  The server calls :class:`BrokerQuotas` from its
handlers and mutes connections; the coordination layer feeds :class:`QuotaConfigStore`.
"""

from .broker_quotas import BrokerQuotas, request_time_percentage
from .manager import EntityMetrics, QuotaManager
from .rate import QuotaWindow, SampledRate
from .resolution import (
    InvalidQuotaConfig,
    QuotaConfigStore,
    QuotaEntityKey,
    QuotaLevel,
    QuotaType,
    ResolvedQuota,
    TenantQuotaDefaults,
    parse_entity_path,
    parse_quota_config,
)
from .throttle import combined_throttle_ms, fetch_size_cap, throttle_time_ms

__all__ = [
    "BrokerQuotas",
    "EntityMetrics",
    "InvalidQuotaConfig",
    "QuotaConfigStore",
    "QuotaEntityKey",
    "QuotaLevel",
    "QuotaManager",
    "QuotaType",
    "QuotaWindow",
    "ResolvedQuota",
    "SampledRate",
    "TenantQuotaDefaults",
    "combined_throttle_ms",
    "fetch_size_cap",
    "parse_entity_path",
    "parse_quota_config",
    "request_time_percentage",
    "throttle_time_ms",
]
