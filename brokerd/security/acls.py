"""Kafka's ACL vocabulary and the ``/acls/<pattern>/<ResourceType>/<name>`` znode format.

One znode holds every rule for one resource pattern (Kafka's ZooKeeper ACL format)::

    {"version": 1, "acls": [
        {"principal": "User:acme.orders", "permissionType": "Allow",
         "operation": "Read", "host": "*"}]}

The resource name in the path is the cluster-wide (tenant-prefixed) name, URL-encoded; the
caller decodes it.  Only Allow rules exist in this service: a Deny rule, an unknown
operation or any other surprise rejects the whole znode (:class:`InvalidAclData`) rather than
being half understood.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum

CLUSTER_NAME = "kafka-cluster"  # the one Cluster resource's name
WILDCARD = "*"  # as a literal resource name, principal name or host: matches everything
WILDCARD_PRINCIPAL = "User:*"


class PatternType(StrEnum):
    LITERAL = "literal"
    PREFIXED = "prefixed"


class ResourceType(StrEnum):
    TOPIC = "Topic"
    GROUP = "Group"
    TRANSACTIONAL_ID = "TransactionalId"
    CLUSTER = "Cluster"


class AclOperation(StrEnum):
    ALL = "All"
    READ = "Read"
    WRITE = "Write"
    CREATE = "Create"
    DELETE = "Delete"
    ALTER = "Alter"
    DESCRIBE = "Describe"
    DESCRIBE_CONFIGS = "DescribeConfigs"
    ALTER_CONFIGS = "AlterConfigs"
    IDEMPOTENT_WRITE = "IdempotentWrite"


class InvalidAclData(ValueError):
    """An ACL znode that is not Kafka's allow-rule JSON."""


@dataclass(frozen=True, slots=True)
class AclEntry:
    """One allow rule: ``principal`` (``User:<name>`` or ``User:*``) may do ``operation``."""

    principal: str
    operation: AclOperation
    host: str


def parse_pattern_type(value: str) -> PatternType:
    """``literal``/``prefixed`` in any case (znode paths use lower case, Kafka's API upper)."""
    try:
        return PatternType(value.lower())
    except ValueError:
        raise InvalidAclData(f"unknown ACL pattern type {value!r}") from None


def parse_resource_type(value: str) -> ResourceType:
    try:
        return ResourceType(value)
    except ValueError:
        raise InvalidAclData(f"unknown ACL resource type {value!r}") from None


def parse_acls(data: bytes | str) -> tuple[AclEntry, ...]:
    """The allow rules of one ACL znode; raises :class:`InvalidAclData`."""
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidAclData(f"ACL znode is not JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("version") != 1:
        raise InvalidAclData("ACL znode must be an object with version 1")
    rules = document.get("acls")
    if not isinstance(rules, list):
        raise InvalidAclData("ACL znode needs an 'acls' list")
    return tuple(_entry(rule) for rule in rules)


def _entry(rule: object) -> AclEntry:
    if not isinstance(rule, dict):
        raise InvalidAclData(f"ACL rule {rule!r} is not an object")
    fields: dict[str, str] = {}
    for key in ("principal", "permissionType", "operation", "host"):
        value = rule.get(key)
        if not isinstance(value, str):
            raise InvalidAclData(f"ACL rule {rule!r} needs a string {key!r}")
        fields[key] = value
    if fields["permissionType"] != "Allow":
        raise InvalidAclData(f"only Allow rules are supported, got {fields['permissionType']!r}")
    principal = fields["principal"]
    if not principal.startswith("User:") or principal == "User:":
        raise InvalidAclData(f"ACL principal {principal!r} is not User:<name>")
    try:
        operation = AclOperation(fields["operation"])
    except ValueError:
        raise InvalidAclData(f"unknown ACL operation {fields['operation']!r}") from None
    return AclEntry(principal, operation, fields["host"])


def encode_acls(entries: tuple[AclEntry, ...] | list[AclEntry]) -> bytes:
    """One resource's znode for ``entries`` (sorted, compact JSON: equal sets, equal bytes,
    the form the control plane writes too)."""
    rules = [{"principal": entry.principal, "permissionType": "Allow",
              "operation": entry.operation.value, "host": entry.host}
             for entry in sorted(set(entries), key=lambda e: (e.principal, e.operation, e.host))]
    return json.dumps({"version": 1, "acls": rules}, sort_keys=True,
                      separators=(",", ":")).encode()
