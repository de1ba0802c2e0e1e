"""The ACL admin APIs' work (KIP-140): CreateAcls, DescribeAcls and DeleteAcls.

Where ACLs live: Kafka's ``/acls/<literal|prefixed>/<Type>/<url-encoded name>`` znodes,
the same the control plane publishes.  The broker that answers a CreateAcls or DeleteAcls
rewrites the affected resource znodes conditionally (re-read and retry on conflict, like
Kafka's ZooKeeper ``AclAuthorizer``) and writes ``/acls/changes/acl_changes_<seq>``; every
broker's watch applies it, this one at once.  The control plane imports those changes into
its database (``tenants/acl_sync.py``), so the console and REST API show them; see
docs/control-plane.md, "ACLs made over Kafka".  DescribeAcls reads this broker's authorizer,
the copy it enforces.

Scope (who may do what is in each handler's ``TENANCY``: Alter on the cluster for Create
and Delete, Describe for Describe): an operator works on the cluster's rules as they are;
a tenant, when its plan has ``acl_admin``, works on its own view only — rules whose
resource is in its namespace (or the cluster) and whose principal is its own, names
translated both ways (:mod:`brokerd.security.acl_bindings`).  A tenant can therefore never
create, see or delete another tenant's rules, nor rules operators made for other principals.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import quote

from brokerd.coordination.security_watch import ACL_CHANGES, ACLS
from brokerd.coordination.zk_await import CoordinationUnavailableError
from brokerd.protocol import ErrorCode
from brokerd.security import InvalidAclData, TenantNamespace, parse_acls
from brokerd.security.acl_bindings import (
    AclBinding,
    AclFilter,
    ForeignResource,
    InvalidBinding,
    binding,
    binding_from_creation,
    binding_to_cluster,
    tenant_view,
)
from brokerd.security.acls import AclEntry, PatternType, ResourceType, encode_acls
from brokerd.server.tenancy_rules import CLUSTER_DENIED, GROUP_DENIED, TOPIC_DENIED, TXN_DENIED

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.connection import Connection
    from brokerd.server.context import HandlerContext

Resource = tuple[PatternType, ResourceType, str]
Outcome = tuple[ErrorCode, str | None]
OK: Outcome = (ErrorCode.NONE, None)
FOREIGN_ERRORS = {ResourceType.TOPIC: TOPIC_DENIED, ResourceType.GROUP: GROUP_DENIED,
                  ResourceType.TRANSACTIONAL_ID: TXN_DENIED, ResourceType.CLUSTER: CLUSTER_DENIED}


def refusal(broker: HandlerContext, connection: Connection) -> Outcome | None:
    """Why this connection may not use the ACL admin APIs at all, or None."""
    namespace = connection.namespace
    if broker.coordinator is None:
        return ErrorCode.SECURITY_DISABLED, "this broker has no ZooKeeper to keep ACLs in"
    if namespace is not None and namespace.tenant is not None and not \
            broker.security.manages_acls(namespace.tenant):
        return (ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "the tenant's plan does not include managing ACLs over Kafka")
    return None


def _namespace(connection: Connection) -> TenantNamespace:
    return connection.namespace or TenantNamespace(None)


def visible_rules(broker: HandlerContext, namespace: TenantNamespace
                  ) -> list[tuple[AclBinding, AclBinding]]:
    """(cluster-wide rule, the caller's view of it) for every rule the caller may see."""
    found = []
    for pattern, rtype, name, entry in broker.security.authorizer.rules():
        rule = binding(pattern, rtype, name, entry)
        view = tenant_view(rule, namespace)
        if view is not None:
            found.append((rule, view))
    return found


def describe(broker: HandlerContext, connection: Connection, body: bodies.DescribeAclsRequest
             ) -> bodies.DescribeAclsResponse:
    """DescribeAcls' answer."""
    try:
        acl_filter = AclFilter.from_request(body)
    except InvalidBinding as exc:
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.INVALID_REQUEST),
                "error_message": str(exc), "resources": []}
    grouped: dict[tuple[int, str, int], list[bodies.DescribeAclsResponseAcl]] = defaultdict(list)
    for _, view in sorted(visible_rules(broker, _namespace(connection)), key=lambda p: p[1]):
        if acl_filter.matches(view):
            wire = view.to_wire()
            grouped[(wire["resource_type"], wire["resource_name"], wire["pattern_type"])].append(
                {"principal": wire["principal"], "host": wire["host"],
                 "operation": wire["operation"], "permission_type": wire["permission_type"]})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "resources": [
        {"resource_type": rtype, "resource_name": name, "pattern_type": pattern, "acls": acls}
        for (rtype, name, pattern), acls in grouped.items()]}


async def create(broker: HandlerContext, connection: Connection,
                 creations: list[bodies.CreateAclsRequestCreation]) -> list[Outcome]:
    """One outcome per creation, in request order."""
    namespace = _namespace(connection)
    outcomes: list[Outcome] = []
    wanted: dict[Resource, set[AclEntry]] = defaultdict(set)
    slots: dict[Resource, list[int]] = defaultdict(list)
    for index, creation in enumerate(creations):
        try:
            rule = binding_to_cluster(binding_from_creation(creation), namespace,
                                      broker.security.is_tenant)
        except InvalidBinding as exc:
            outcomes.append((ErrorCode.INVALID_REQUEST, str(exc)))
            continue
        except ForeignResource as exc:
            outcomes.append((FOREIGN_ERRORS[exc.resource_type], str(exc)))
            continue
        outcomes.append(OK)
        wanted[rule.resource].add(rule.entry)
        slots[rule.resource].append(index)
    for resource, entries in wanted.items():
        outcome = await _write(broker, resource, entries.__or__)
        for index in slots[resource]:
            outcomes[index] = outcome
    return outcomes


async def delete(broker: HandlerContext, connection: Connection,
                 filter_bodies: list[bodies.DeleteAclsRequestFilter]
                 ) -> list[bodies.DeleteAclsResponseFilterResult]:
    """One ``filter_results`` entry per filter, in request order."""
    namespace = _namespace(connection)
    filters: list[AclFilter | None] = []
    results: list[bodies.DeleteAclsResponseFilterResult] = []
    for body in filter_bodies:
        try:
            filters.append(AclFilter.from_request(body))
            results.append({"error_code": 0, "error_message": None, "matching_acls": []})
        except InvalidBinding as exc:
            filters.append(None)
            results.append({"error_code": int(ErrorCode.INVALID_REQUEST),
                            "error_message": str(exc), "matching_acls": []})
    valid = [f for f in filters if f is not None]
    candidates = {rule.resource for rule, view in visible_rules(broker, namespace)
                  if any(f.matches(view) for f in valid)}
    for resource in sorted(candidates):
        removed: list[AclBinding] = []

        def drop(current: set[AclEntry], resource: Resource = resource,
                 removed: list[AclBinding] = removed) -> set[AclEntry]:
            removed.clear()
            for entry in current:
                view = tenant_view(binding(*resource, entry), namespace)
                if view is not None and any(f.matches(view) for f in valid):
                    removed.append(view)
            return current - {_cluster_entry(resource, v, namespace) for v in removed}

        error, message = await _write(broker, resource, drop)
        for acl_filter, result in zip(filters, results, strict=True):
            if acl_filter is None:
                continue
            for view in sorted(removed):
                if acl_filter.matches(view):
                    result["matching_acls"].append(
                        {"error_code": int(error), "error_message": message, **view.to_wire()})
    return results


def _cluster_entry(resource: Resource, view: AclBinding, namespace: TenantNamespace
                   ) -> AclEntry:
    principal = view.principal
    if namespace.tenant is not None:
        principal = f"User:{namespace.to_cluster(principal.removeprefix('User:'))}"
    return AclEntry(principal, view.operation, view.host)


async def _write(broker: HandlerContext, resource: Resource,
                 change: Callable[[set[AclEntry]], set[AclEntry]]) -> Outcome:
    """Rewrite one resource's znode with ``change`` and apply the result here at once."""
    pattern, rtype, name = resource
    quoted = quote(name, safe="")
    path = f"{ACLS}/{pattern.value}/{rtype.value}/{quoted}"

    def rewrite(data: bytes | None) -> bytes | None:
        current = set(parse_acls(data)) if data is not None else set()
        updated = change(current)
        if updated == current:
            return data
        return encode_acls(list(updated)) if updated else None

    notification = json.dumps({"version": 1, "resourceType": rtype.value, "name": name,
                               "patternType": pattern.value.upper()}).encode()
    assert broker.coordinator is not None
    try:
        _, after = await broker.coordinator.update_security_node(
            path, rewrite, f"{ACL_CHANGES}/acl_changes_", notification)
    except InvalidAclData as exc:
        return ErrorCode.UNKNOWN_SERVER_ERROR, f"the ACLs stored for {name!r} are unreadable: {exc}"
    except CoordinationUnavailableError as exc:
        return ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)
    broker.security.acl_changed(pattern.value, rtype.value, quoted, after)
    return OK

