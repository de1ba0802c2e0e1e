"""Which ACL rules of one resource to adopt, forget and publish: a three-way merge, pure.

ACLs have two writers: the control plane (console, REST) and Kafka clients (CreateAcls /
DeleteAcls, which brokerd writes straight into the resource's ``/acls/…`` znode).  The
database stays the source of truth because every difference is explained against the
*base*, what the control plane itself last wrote to that znode:

- in ZooKeeper, not in the base: added over Kafka -> **adopt** (a row, when the rule fits the
  control plane's model: see :func:`representable`);
- in the base, not in ZooKeeper: deleted over Kafka -> **forget** the row;
- anything else: the database decides (a row revoked in the console leaves ZooKeeper, a row
  granted there is published), so an import never resurrects a revoked rule and a publish
  never erases a rule a client just made.

Rules the model cannot hold (an operator's rule for a principal of no tenant, on a resource
of no tenant, for another tenant's principal, with a host other than ``*``) are kept in
ZooKeeper as they are: operators manage those over Kafka, and they are listed read-only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Entry = tuple[str, str, str]  # (Kafka principal "User:<name>", operation, host)
Resource = tuple[str, str, str]  # (pattern type LITERAL|PREFIXED, resource type, cluster-wide name)

CLUSTER = "Cluster"
CLUSTER_NAME = "kafka-cluster"
OPERATIONS = frozenset({"All", "Read", "Write", "Create", "Delete", "Alter", "Describe",
                        "DescribeConfigs", "AlterConfigs", "IdempotentWrite"})
PRINCIPAL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,100}")
MAX_RESOURCE_NAME = 200


@dataclass(frozen=True)
class Fit:
    """Where a rule goes in the database: the tenant, its principal's name, the resource's
    own (unprefixed) name."""

    tenant: str
    principal: str
    resource_name: str


@dataclass(frozen=True)
class MergePlan:
    """``publish`` goes to ZooKeeper; ``managed`` (its part the database holds) becomes the
    next base, so rules the control plane merely carried along are never taken for its own."""

    adopt: frozenset[Entry]
    forget: frozenset[Entry]
    publish: frozenset[Entry]
    managed: frozenset[Entry]


def representable(resource: Resource, entry: Entry, tenants: set[str]) -> Fit | None:
    """How the rule fits the ``Acl`` model, or None when it does not."""
    pattern, resource_type, name = resource
    principal, operation, host = entry
    if host != "*" or operation not in OPERATIONS or not principal.startswith("User:"):
        return None
    slug, dot, who = principal[len("User:"):].partition(".")
    if not dot or slug not in tenants or not PRINCIPAL_NAME.fullmatch(who):
        return None
    if resource_type == CLUSTER:
        return Fit(slug, who, name) if (name, pattern) == (CLUSTER_NAME, "LITERAL") else None
    prefix = f"{slug}."
    own = name[len(prefix):]
    if not name.startswith(prefix) or len(own) > MAX_RESOURCE_NAME or (
            pattern == "LITERAL" and not own):
        return None
    return Fit(slug, who, own)


def plan_merge(resource: Resource, base: set[Entry], cluster: set[Entry], rows: set[Entry],
               tenants: set[str]) -> MergePlan:
    """What to do with one resource, given the base, ZooKeeper's rules and the rows."""
    adopt = {e for e in cluster - base
             if e not in rows and representable(resource, e, tenants) is not None}
    forget = (base - cluster) & rows
    managed = (rows | adopt) - forget
    # Rules this control plane never held and cannot hold; a rule it did hold (in the base)
    # leaves with its row even when it no longer fits (its tenant was deleted).
    unmanaged = {e for e in cluster - base if representable(resource, e, tenants) is None}
    return MergePlan(frozenset(adopt), frozenset(forget), frozenset(managed | unmanaged),
                     frozenset(managed))


def needs_merge(resource: Resource, base: set[Entry], cluster: set[Entry],
                tenants: set[str]) -> bool:
    """Whether ZooKeeper changed since the control plane's last write, as far as the
    database is concerned (others' unmanaged rules alone do not count)."""
    return {e for e in cluster if e in base or representable(resource, e, tenants)} != base
