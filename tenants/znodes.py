"""ZooKeeper paths and payloads the control plane publishes, in Kafka's own JSON formats.

Pure functions (no I/O) so the formats are unit-tested in milliseconds.  Brokers read:

- ``/tenants/<slug>``: ``{"version":1,"name":…,"plan":…,"status":…,"quota_defaults":{…},
  "max_partitions":N,"acl_admin":bool,"replication_factor":N|null}``
- ``/config/users/<api-key>``: the key's SCRAM credentials plus the principal and tenant it
  authenticates as (``{"version":1,"config":{"SCRAM-SHA-256":…,"SCRAM-SHA-512":…,"principal":…,"tenant":…}}``)
- ``/config/users/<user>[/clients/<client>]``, ``/config/clients/<client>``: quota overrides
- ``/config/changes/config_change_<seq>``: ``{"version":2,"entity_path":"users/…"}`` after each change
- ``/acls/<literal|prefixed>/<ResourceType>/<name>`` and ``/acls/changes/acl_changes_<seq>``

Topics are not written here: brokerd owns ``/brokers/topics`` and ``/config/topics`` and the
control plane asks for topics over the Kafka protocol (``kafka_admin``, ``topic_sync``).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping, Sequence
from urllib.parse import quote

DEFAULT_ENTITY = "<default>"
CHANGES_ZNODE = "/config/changes"
CHANGE_PREFIX = "config_change_"


def sanitize(name: str) -> str:
    """Entity names are URL-encoded in znode paths (as Kafka's Sanitizer does); <default> stays literal."""
    return name if name == DEFAULT_ENTITY else quote(name, safe="")


def entity_path(user: str | None, client_id: str | None) -> str:
    """Kafka's quota entity path: ``users/<u>``, ``users/<u>/clients/<c>`` or ``clients/<c>``."""
    if user:
        path = f"users/{sanitize(user)}"
        return f"{path}/clients/{sanitize(client_id)}" if client_id else path
    if client_id:
        return f"clients/{sanitize(client_id)}"
    raise ValueError("a quota entity needs a user, a client id, or both")


def config_znode(path: str) -> str:
    return f"/config/{path}"


def encode(payload: Mapping[str, object]) -> bytes:
    """Canonical JSON (sorted keys, no spaces) so equal states compare equal byte for byte."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()


def decode(data: bytes | None) -> dict:
    """A znode's JSON object; an absent or empty node reads as ``{}``."""
    return json.loads(data) if data else {}


def config_payload(config: Mapping[str, str]) -> bytes:
    return encode({"version": 1, "config": dict(config)})


def change_notification(path: str) -> bytes:
    return encode({"version": 2, "entity_path": path})


def tenant_znode(slug: str) -> str:
    return f"/tenants/{slug}"


def tenant_payload(*, name: str, plan: str, status: str, quota_defaults: Mapping[str, str],
                   max_partitions: int, acl_admin: bool = False,
                   replication_factor: int | None = None) -> bytes:
    """``acl_admin``: the plan lets the tenant's principals manage its ACLs over Kafka.
    ``replication_factor``: the only one the tenant's CreateTopics may use (None: the
    brokers' ``default.replication.factor``)."""
    return encode({
        "version": 1, "name": name, "plan": plan, "status": status,
        "quota_defaults": dict(quota_defaults), "max_partitions": max_partitions,
        "acl_admin": acl_admin, "replication_factor": replication_factor,
    })


def api_key_config(*, scram_sha_256: str, scram_sha_512: str, principal: str, tenant: str) -> dict[str, str]:
    return {
        "SCRAM-SHA-256": scram_sha_256,
        "SCRAM-SHA-512": scram_sha_512,
        "principal": principal,
        "tenant": tenant,
    }


TOPICS_ZNODE = "/brokers/topics"


def topic_znode(topic: str) -> str:
    """Where brokerd keeps a topic's assignment: the control plane only reads it (topics are
    created, grown and deleted through Kafka's admin APIs, see ``topic_sync``)."""
    return f"{TOPICS_ZNODE}/{topic}"


def topic_config_path(topic: str) -> str:
    return f"topics/{topic}"


def uuid_from_kafka(text: str) -> uuid.UUID:
    """A Kafka Uuid as printed in znodes: URL-safe base64 of its 16 bytes, without padding."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


ACL_CHANGES_ZNODE = "/acls/changes"
ACL_CHANGE_PREFIX = "acl_changes_"


def acl_znode(pattern_type: str, resource_type: str, resource_name: str) -> str:
    """``/acls/<literal|prefixed>/<ResourceType>/<url-encoded cluster-wide name>``."""
    return f"/acls/{pattern_type.lower()}/{resource_type}/{quote(resource_name, safe='')}"


def acl_payload(entries: Sequence[tuple[str, str]]) -> bytes:
    """Kafka's ACL znode JSON for one resource: (Kafka user, operation) allow entries, any host."""
    acls = [{"principal": f"User:{user}", "permissionType": "Allow", "operation": operation, "host": "*"}
            for user, operation in sorted(set(entries))]
    return encode({"version": 1, "acls": acls})


def acl_change_notification(pattern_type: str, resource_type: str, resource_name: str) -> bytes:
    return encode({"version": 1, "resourceType": resource_type, "name": resource_name,
                   "patternType": pattern_type})
