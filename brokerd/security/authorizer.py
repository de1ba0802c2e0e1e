"""ACL checks with Kafka's semantics, over an in-memory copy of ``/acls``.

Rules (those of Kafka's ``AclAuthorizer`` for allow-only ACLs):

- A principal in ``super_users`` (e.g. ``User:ANONYMOUS`` on the operator listener, operator
  service accounts) may do everything.
- Otherwise a request is allowed only if some rule allows it (default deny; Kafka's
  ``allow.everyone.if.no.acl.found=false``).  A rule applies when its resource matches —
  a literal rule on exactly the name or on ``*``, or a prefixed rule whose prefix starts the
  name — and its principal is the caller's or ``User:*``, and its host is ``*`` or the
  caller's address.
- Operation ``All`` allows every operation.  Some operations imply another: an allowed Read,
  Write, Delete or Alter also allows Describe; an allowed AlterConfigs allows DescribeConfigs.
- IdempotentWrite on the Cluster (what InitProducerId of an idempotent producer asks for) is
  allowed by an explicit Cluster rule, or — as since Kafka 3.0 (KIP-679) — by Write (or All)
  on any topic at all, so a tenant that may produce may also be idempotent without holding a
  cluster-wide permission.

Speed: rules live in dictionaries keyed by resource, prefixed rules are looked up by each
distinct prefix length present (a handful), and decisions are memoised until the ACLs next
change, so a produce to 1000 partitions of one topic costs one evaluation.  Not thread-safe:
the event loop thread only (the coordination layer's watch callbacks must hand updates over).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from brokerd.security.acls import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclEntry,
    AclOperation,
    PatternType,
    ResourceType,
    parse_acls,
    parse_pattern_type,
    parse_resource_type,
)
from brokerd.security.principal import Principal

# For each requested operation, the allowed operations that grant it.
_GRANTED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    operation: frozenset({operation, AclOperation.ALL}) for operation in AclOperation
}
_GRANTED_BY[AclOperation.DESCRIBE] |= {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                                       AclOperation.ALTER}
_GRANTED_BY[AclOperation.DESCRIBE_CONFIGS] |= {AclOperation.ALTER_CONFIGS}
_TOPIC_WRITE = frozenset({AclOperation.WRITE, AclOperation.ALL})

_K = TypeVar("_K")
_DecisionKey = tuple[str, AclOperation, ResourceType, str, str | None]


class Authorizer:
    """The broker's ACL cache and decision function."""

    def __init__(self, super_users: Iterable[str], *, max_cached_decisions: int = 100_000) -> None:
        """``super_users`` are Kafka principals (``User:<name>``) that bypass ACLs."""
        self._super_users = frozenset(super_users)
        self._max_cached_decisions = max_cached_decisions
        self._literal: dict[tuple[ResourceType, str], tuple[AclEntry, ...]] = {}
        self._prefixed: dict[ResourceType, dict[str, tuple[AclEntry, ...]]] = {}
        self._prefix_lengths: dict[ResourceType, tuple[int, ...]] = {}
        self._decisions: dict[_DecisionKey, bool] = {}
        self._topic_writers: frozenset[tuple[str, str]] | None = None

    def set_resource_acls(self, pattern_type: PatternType | str, resource_type: ResourceType | str,
                          name: str, acls_json: bytes | str | None) -> None:
        """Replace the rules of one resource pattern with a znode's content (None: deleted).

        ``name`` is the cluster-wide resource name, already URL-decoded.  On malformed data the
        resource's old rules are dropped (fail closed) before :class:`InvalidAclData` is raised.
        """
        pattern = parse_pattern_type(pattern_type)
        rtype = parse_resource_type(resource_type)
        self._store(pattern, rtype, name, ())  # first, so a parse error leaves no stale rules
        if acls_json is not None:
            self._store(pattern, rtype, name, parse_acls(acls_json))

    def authorize(self, principal: Principal, operation: AclOperation, resource_type: ResourceType,
                  resource_name: str, host: str | None = None) -> bool:
        """May ``principal`` (connected from ``host``) do ``operation`` on the named resource?

        The name is the cluster-wide one: map a tenant's name with its namespace first.
        """
        user = principal.kafka_principal
        if user in self._super_users:
            return True
        key = (user, operation, resource_type, resource_name, host)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._evaluate(user, operation, resource_type, resource_name, host)
            if len(self._decisions) >= self._max_cached_decisions:
                self._decisions.clear()
            self._decisions[key] = decision
        return decision

    def authorize_many(self, principal: Principal, operation: AclOperation,
                       resource_type: ResourceType, resource_names: Iterable[str],
                       host: str | None = None) -> dict[str, bool]:
        """One decision per distinct name, for requests that repeat a topic per partition."""
        return {name: self.authorize(principal, operation, resource_type, name, host)
                for name in dict.fromkeys(resource_names)}

    def rules(self) -> Iterator[tuple[PatternType, ResourceType, str, AclEntry]]:
        """Every rule held, as (pattern type, resource type, cluster-wide name, entry): what
        DescribeAcls lists and DeleteAcls matches its filters against."""
        for (rtype, name), entries in self._literal.items():
            for entry in entries:
                yield PatternType.LITERAL, rtype, name, entry
        for rtype, by_prefix in self._prefixed.items():
            for name, entries in by_prefix.items():
                for entry in entries:
                    yield PatternType.PREFIXED, rtype, name, entry

    def _store(self, pattern: PatternType, rtype: ResourceType, name: str,
               entries: tuple[AclEntry, ...]) -> None:
        if pattern is PatternType.LITERAL:
            _put(self._literal, (rtype, name), entries)
        else:
            by_prefix = self._prefixed.setdefault(rtype, {})
            _put(by_prefix, name, entries)
            self._prefix_lengths[rtype] = tuple(sorted({len(prefix) for prefix in by_prefix}))
        self._decisions.clear()
        self._topic_writers = None

    def _evaluate(self, user: str, operation: AclOperation, rtype: ResourceType, name: str,
                  host: str | None) -> bool:
        granting = _GRANTED_BY[operation]
        for entry in self._matching_entries(rtype, name):
            if (entry.operation in granting and entry.principal in (user, WILDCARD_PRINCIPAL)
                    and entry.host in (WILDCARD, host)):
                return True
        if operation is AclOperation.IDEMPOTENT_WRITE and rtype is ResourceType.CLUSTER:
            writers = self._writers_of_some_topic()
            return any((who, where) in writers
                       for who in (user, WILDCARD_PRINCIPAL) for where in (WILDCARD, host))
        return False

    def _matching_entries(self, rtype: ResourceType, name: str) -> Iterator[AclEntry]:
        yield from self._literal.get((rtype, name), ())
        if name != WILDCARD:
            yield from self._literal.get((rtype, WILDCARD), ())
        by_prefix = self._prefixed.get(rtype, {})
        for length in self._prefix_lengths.get(rtype, ()):
            if length > len(name):
                break
            yield from by_prefix.get(name[:length], ())

    def _writers_of_some_topic(self) -> frozenset[tuple[str, str]]:
        """(principal, host) pairs allowed Write on at least one topic pattern; cached."""
        if self._topic_writers is None:
            topic_rules = [entries for (rtype, _), entries in self._literal.items()
                           if rtype is ResourceType.TOPIC]
            topic_rules.extend(self._prefixed.get(ResourceType.TOPIC, {}).values())
            self._topic_writers = frozenset(
                (entry.principal, entry.host) for entries in topic_rules for entry in entries
                if entry.operation in _TOPIC_WRITE)
        return self._topic_writers


def _put(table: dict[_K, tuple[AclEntry, ...]], key: _K, entries: tuple[AclEntry, ...]) -> None:
    if entries:
        table[key] = entries
    else:
        table.pop(key, None)
