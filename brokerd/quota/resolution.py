"""Which quota applies to a connection, where it was configured, and who shares it.

Kafka's precedence (``ClientQuotaManager``'s default callback), most specific first::

    1. /config/users/<user>/clients/<client-id>
    2. /config/users/<user>/clients/<default>
    3. /config/users/<user>
    4. /config/users/<default>/clients/<client-id>
    5. /config/users/<default>/clients/<default>
    6. /config/users/<default>
    7. /config/clients/<client-id>
    8. /config/clients/<default>
    (nothing matches: unlimited)

Per key, independently.  Kafka runs one quota manager per quota type (produce, fetch,
request), each holding only the entities that set *its* key, so ``producer_byte_rate``,
``consumer_byte_rate`` and ``request_percentage`` each walk the list on their own: a
connection may take its produce quota from level 1 and its fetch quota from level 8.  An
entity znode that sets none of the keys (e.g. ``/config/users/<api-key>``, which holds SCRAM
credentials) takes part in no resolution.

Who shares a quota (Kafka's metric tags rule).  A ``<default>`` level is not shared by
everyone it covers: each covered entity gets its own quota of that size.  Levels 1, 2, 4, 5
give one quota per (user, client-id); levels 3 and 6 one per user, shared by all that user's
client ids; levels 7, 8 (and "unlimited", which still measures) one per client id, shared by
every user sending it.

Multi-tenancy.  A principal's Kafka user is ``<tenant>.<name>``; its tenant's plan
(``/tenants/<slug>`` ``quota_defaults``) takes the place of the cluster-wide ``<default>``
user entries for that tenant's users: levels 4-6 are read from the plan, not from
``/config/users/<default>…``.  A plan is one config map, so it supplies level 6; levels 4 and
5 are empty inside a tenant.  Users without a tenant (operators, ANONYMOUS) see the
cluster-wide entries.  One deliberate departure from Kafka: the per-client-id sharing of
levels 7, 8 and unlimited is scoped to the tenant, so two tenants that both use client id
``app-1`` never throttle each other.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from urllib.parse import unquote

DEFAULT_ENTITY = "<default>"
# Resolutions cached per (type, user, client id, tenant plan); clients choose client ids
# freely, so the cache is bounded (least recently used first out).
DEFAULT_CACHE_SIZE = 65536


class QuotaType(Enum):
    """A quota manager's type; the value is the config key that sets its limit."""

    PRODUCE = "producer_byte_rate"    # bytes/s of produce requests
    FETCH = "consumer_byte_rate"      # bytes/s of fetch responses
    REQUEST = "request_percentage"    # percent of one request-handler thread


class QuotaLevel(Enum):
    """The eight precedence levels, most specific first; the value is Kafka's entity path."""

    USER_CLIENT = "users/<user>/clients/<client-id>"
    USER_DEFAULT_CLIENT = "users/<user>/clients/<default>"
    USER = "users/<user>"
    DEFAULT_USER_CLIENT = "users/<default>/clients/<client-id>"
    DEFAULT_USER_DEFAULT_CLIENT = "users/<default>/clients/<default>"
    DEFAULT_USER = "users/<default>"
    CLIENT = "clients/<client-id>"
    DEFAULT_CLIENT = "clients/<default>"

    @property
    def is_default_user(self) -> bool:
        """A ``<default>`` user level: the tenant plan's levels inside a tenant."""
        return self in (QuotaLevel.DEFAULT_USER_CLIENT, QuotaLevel.DEFAULT_USER_DEFAULT_CLIENT,
                        QuotaLevel.DEFAULT_USER)


class InvalidQuotaConfig(ValueError):
    """A quota key's value is not a positive, finite number."""


def parse_quota_config(config: Mapping[str, object]) -> dict[QuotaType, float]:
    """The quota limits in one entity's config map; other keys (SCRAM, principal) ignored.

    Kafka writes values as decimal strings (``{"producer_byte_rate":"1048576"}``); numbers are
    accepted too.  A limit must be positive: the throttle formula divides by it.
    """
    limits: dict[QuotaType, float] = {}
    for quota_type in QuotaType:
        raw = config.get(quota_type.value)
        if raw is None:
            continue
        try:
            if isinstance(raw, bool) or not isinstance(raw, str | int | float):
                raise ValueError("not a number")
            limit = float(raw)
        except ValueError:
            raise InvalidQuotaConfig(f"{quota_type.value}={raw!r} is not a number") from None
        if not math.isfinite(limit) or limit <= 0:
            raise InvalidQuotaConfig(f"{quota_type.value}={raw!r} must be positive and finite")
        limits[quota_type] = limit
    return limits


@dataclass(frozen=True)
class TenantQuotaDefaults:
    """A tenant plan's quota defaults: the ``users/<default>`` level for the tenant's users.

    Hashable, so it can be part of the resolution cache key; build it once per tenant znode
    change with :meth:`from_config`, not per request.
    """

    tenant: str
    producer_byte_rate: float | None = None
    consumer_byte_rate: float | None = None
    request_percentage: float | None = None

    @classmethod
    def from_config(cls, tenant: str, quota_defaults: Mapping[str, object]) -> TenantQuotaDefaults:
        """From ``/tenants/<slug>``'s ``quota_defaults`` map (Kafka config form)."""
        limits = parse_quota_config(quota_defaults)
        return cls(tenant, limits.get(QuotaType.PRODUCE), limits.get(QuotaType.FETCH),
                   limits.get(QuotaType.REQUEST))

    def limit(self, quota_type: QuotaType) -> float | None:
        return {QuotaType.PRODUCE: self.producer_byte_rate,
                QuotaType.FETCH: self.consumer_byte_rate,
                QuotaType.REQUEST: self.request_percentage}[quota_type]


@dataclass(frozen=True)
class QuotaEntityKey:
    """The set of connections sharing one quota (one rate sensor) on this broker.

    ``user`` / ``client_id`` are ``""`` when the quota is not split by them (Kafka's metric
    tags); ``tenant`` is ``""`` outside tenants and otherwise scopes client-id-only sharing.
    """

    tenant: str
    user: str
    client_id: str


@dataclass(frozen=True)
class ResolvedQuota:
    """One quota type's answer for one (user, client id, tenant plan).

    ``limit is None`` means unlimited (then ``level`` is None too).  ``from_tenant_plan`` says
    a ``<default>`` user level came from the tenant's plan rather than from ``/config``.
    """

    quota_type: QuotaType
    limit: float | None
    level: QuotaLevel | None
    from_tenant_plan: bool
    entity: QuotaEntityKey

    def describe(self) -> str:
        """Where the limit comes from, for operators: ``tenant acme plan (users/<default>)``."""
        if self.level is None:
            return "unlimited"
        if self.from_tenant_plan:
            return f"tenant {self.entity.tenant} plan ({self.level.value})"
        return f"/config/{self.level.value}"


def parse_entity_path(entity_path: str) -> tuple[str | None, str | None] | None:
    """``users/<u>[/clients/<c>]`` or ``clients/<c>`` to (user, client id), names desanitized.

    Returns None for entity types that carry no client quotas (``topics/…``, ``brokers/…``),
    so every config-change notification can be passed in.  Names are URL-encoded in paths
    (Kafka's ``Sanitizer``); ``<default>`` is literal.
    """
    parts = entity_path.strip("/").split("/")
    if parts[0] not in ("users", "clients"):
        return None
    if any(part == "" for part in parts):
        raise ValueError(f"malformed quota entity path {entity_path!r}")
    names = [unquote(part) for part in parts]
    if parts[0] == "clients" and len(parts) == 2:
        return None, names[1]
    if parts[0] == "users" and len(parts) == 2:
        return names[1], None
    if parts[0] == "users" and len(parts) == 4 and parts[2] == "clients":
        return names[1], names[3]
    raise ValueError(f"malformed quota entity path {entity_path!r}")


_EntityId = tuple[str | None, str | None]
_CacheKey = tuple[QuotaType, str, str, TenantQuotaDefaults | None]


class QuotaConfigStore:
    """The broker's current quota entities, and the cached answer of who gets which quota.

    The coordination layer feeds it from ``/config/users|clients/…`` znodes (on start and on
    every ``/config/changes`` notification); the quota managers ask :meth:`resolve` on every
    request, so answers are cached and the whole cache is dropped on any change (changes
    are rare, requests are not).  Not thread-safe: used from the event loop only.
    """

    def __init__(self, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        self._entities: dict[_EntityId, dict[QuotaType, float]] = {}
        self._cache: OrderedDict[_CacheKey, ResolvedQuota] = OrderedDict()
        self._cache_size = cache_size

    def set_entity(self, entity_path: str, config: Mapping[str, object] | None) -> None:
        """Install (or with None, remove) one entity's config, e.g. ``("clients/app-1",
        {"producer_byte_rate": "1048576"})``: the ``config`` map of the znode's JSON.

        Paths of other entity types are ignored.  Raises :class:`InvalidQuotaConfig` (leaving
        the store unchanged) if a quota key's value is unusable, and ValueError for a
        malformed user/client path.
        """
        entity = parse_entity_path(entity_path)
        if entity is None:
            return
        limits = parse_quota_config(config) if config is not None else {}
        if limits:
            self._entities[entity] = limits
        else:
            self._entities.pop(entity, None)
        self._cache.clear()

    def entities(self) -> dict[_EntityId, dict[QuotaType, float]]:
        """A copy of every entity's limits, keyed (user, client id), None for no part."""
        return {entity: dict(limits) for entity, limits in self._entities.items()}

    def replace_all(self, configs: Mapping[str, Mapping[str, object]]) -> None:
        """Replace every entity at once (a full reload, e.g. after a ZooKeeper session loss,
        when deletions may have been missed).  All-or-nothing on invalid input."""
        entities: dict[_EntityId, dict[QuotaType, float]] = {}
        for entity_path, config in configs.items():
            entity = parse_entity_path(entity_path)
            limits = parse_quota_config(config)
            if entity is not None and limits:
                entities[entity] = limits
        self._entities = entities
        self._cache.clear()

    def resolve(self, quota_type: QuotaType, user: str, client_id: str,
                tenant: TenantQuotaDefaults | None) -> ResolvedQuota:
        """The quota of ``quota_type`` for a connection; ``tenant`` is its principal's plan."""
        key = (quota_type, user, client_id, tenant)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        resolved = self._resolve(quota_type, user, client_id, tenant)
        self._cache[key] = resolved
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return resolved

    def _resolve(self, quota_type: QuotaType, user: str, client_id: str,
                 tenant: TenantQuotaDefaults | None) -> ResolvedQuota:
        tenant_name = tenant.tenant if tenant is not None else ""
        for level in QuotaLevel:
            if level.is_default_user and tenant is not None:
                limit = tenant.limit(quota_type) if level is QuotaLevel.DEFAULT_USER else None
            else:
                limit = self._entities.get(_entity_at(level, user, client_id), {}).get(quota_type)
            if limit is not None:
                return ResolvedQuota(quota_type, limit, level,
                                     level.is_default_user and tenant is not None,
                                     _sharing_key(level, tenant_name, user, client_id))
        return ResolvedQuota(quota_type, None, None, False,
                             QuotaEntityKey(tenant_name, "", client_id))


def _entity_at(level: QuotaLevel, user: str, client_id: str) -> _EntityId:
    """The configured entity a level reads for this (user, client id)."""
    return {
        QuotaLevel.USER_CLIENT: (user, client_id),
        QuotaLevel.USER_DEFAULT_CLIENT: (user, DEFAULT_ENTITY),
        QuotaLevel.USER: (user, None),
        QuotaLevel.DEFAULT_USER_CLIENT: (DEFAULT_ENTITY, client_id),
        QuotaLevel.DEFAULT_USER_DEFAULT_CLIENT: (DEFAULT_ENTITY, DEFAULT_ENTITY),
        QuotaLevel.DEFAULT_USER: (DEFAULT_ENTITY, None),
        QuotaLevel.CLIENT: (None, client_id),
        QuotaLevel.DEFAULT_CLIENT: (None, DEFAULT_ENTITY),
    }[level]


def _sharing_key(level: QuotaLevel, tenant: str, user: str, client_id: str) -> QuotaEntityKey:
    """Kafka's metric tags for the level that matched (see the module docstring)."""
    if level in (QuotaLevel.USER, QuotaLevel.DEFAULT_USER):
        return QuotaEntityKey(tenant, user, "")
    if level in (QuotaLevel.CLIENT, QuotaLevel.DEFAULT_CLIENT):
        return QuotaEntityKey(tenant, "", client_id)
    return QuotaEntityKey(tenant, user, client_id)
