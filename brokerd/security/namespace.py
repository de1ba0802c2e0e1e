"""Tenant namespaces: how the names a client sends map to cluster-wide names and back.

A tenant's topics, consumer groups and transactional ids are stored cluster-wide as
``<tenant>.<name>``; the tenant itself only ever sees ``<name>``.  The rule is the same for
all three kinds of name, so one :class:`TenantNamespace` serves them all.

Isolation invariants (tested):

- ``to_cluster`` always prepends the tenant's own prefix, whatever the name contains: a tenant
  ``acme`` sending ``globex.orders`` addresses ``acme.globex.orders``, never globex's topic.
  Tenant slugs are ``[a-z0-9-]+`` (no dot), so no tenant's prefix is a prefix of another's:
  ``acme.`` cannot start a name of tenant ``acme-eu`` (``acme-eu.``), nor the reverse.
- ``to_tenant`` returns None for every name outside the tenant's prefix, so responses listing
  the cluster's names (Metadata, ListGroups, …) filter through it.  That includes internal
  topics (``__consumer_offsets``, ``__usage``, anything starting ``__``): a slug has no ``_``,
  so no tenant prefix starts with ``__``.
- The operator namespace is the identity: operators see the cluster as it is.

Length: Kafka caps topic names at 249 characters, so a tenant may use at most
``249 - len(prefix)``; :attr:`TenantNamespace.max_topic_name_length` says how many.
"""

from __future__ import annotations

from collections.abc import Iterable

from brokerd.security.credentials import TENANT_SLUG
from brokerd.security.principal import Principal

SEPARATOR = "."
MAX_TOPIC_NAME_LENGTH = 249  # Kafka's limit on a topic name (a file-name limit in disguise)


class TenantNamespace:
    """The name mapping of one connection: a tenant's (``tenant`` slug) or the operators' (None)."""

    def __init__(self, tenant: str | None) -> None:
        if tenant is not None and not TENANT_SLUG.fullmatch(tenant):
            raise ValueError(f"tenant {tenant!r} is not a slug [a-z0-9-]+")
        self.tenant = tenant
        self.prefix = "" if tenant is None else f"{tenant}{SEPARATOR}"

    @classmethod
    def for_principal(cls, principal: Principal) -> TenantNamespace:
        return cls(principal.tenant)

    @property
    def is_operator(self) -> bool:
        return self.tenant is None

    @property
    def max_topic_name_length(self) -> int:
        return MAX_TOPIC_NAME_LENGTH - len(self.prefix)

    def to_cluster(self, name: str) -> str:
        """The cluster-wide name of a topic, group id or transactional id the client sent."""
        return self.prefix + name

    def to_tenant(self, cluster_name: str) -> str | None:
        """The name the client sees for a cluster-wide name, or None if it is not the tenant's."""
        if self.tenant is None:
            return cluster_name
        if not cluster_name.startswith(self.prefix):
            return None
        return cluster_name[len(self.prefix):]

    def owns(self, cluster_name: str) -> bool:
        return self.to_tenant(cluster_name) is not None

    def visible(self, cluster_names: Iterable[str]) -> dict[str, str]:
        """The tenant's share of a listing: cluster-wide name -> the name the client sees."""
        mapped = ((name, self.to_tenant(name)) for name in cluster_names)
        return {name: local for name, local in mapped if local is not None}

    def __repr__(self) -> str:
        return f"TenantNamespace({self.tenant!r})"
