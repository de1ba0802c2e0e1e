"""SCRAM users made over Kafka (AlterUserScramCredentials, KIP-554), as the control plane sees them.

brokerd writes such a user's credentials into ``/config/users/<url-encoded name>`` — the
node kind the control plane writes for API keys — with no ``principal`` or ``tenant``: the
user is an operator principal.  They are not rows here (operators manage them with Kafka's
tools); this module lists them, read-only, for the REST API and the console.  Reconciliation
leaves them alone: it only removes ``/config/users`` nodes that name a ``principal`` (API
keys), and quota publication keeps the credential keys of a node it rewrites.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
USERS = "/config/users"


def iterations(credential: str) -> int | None:
    """The ``iterations=`` field of a stored credential (None: unreadable)."""
    for part in credential.split(","):
        key, _, value = part.partition("=")
        if key == "iterations" and value.isdecimal():
            return int(value)
    return None


def scram_users_from(configs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Users with SCRAM credentials and no tenant, from ``{name: config map}``; pure."""
    users = []
    for name, config in sorted(configs.items()):
        if "principal" in config or "tenant" in config:
            continue  # an API key: shown with its tenant
        mechanisms = [{"mechanism": m, "iterations": iterations(str(config[m]))}
                      for m in SCRAM_MECHANISMS if m in config]
        if mechanisms:
            users.append({"name": name, "mechanisms": mechanisms})
    return users


def scram_users(zk: KazooClient) -> list[dict[str, Any]]:
    """Every SCRAM user made over Kafka, read in one pipelined round."""
    names = zk.get_children(USERS) if zk.exists(USERS) else []
    pending = {name: zk.get_async(f"{USERS}/{name}") for name in names}
    configs = {}
    for quoted, result in pending.items():
        try:
            data = result.get()[0]
            config = json.loads(data).get("config", {}) if data else {}
        except (NoNodeError, ValueError, AttributeError):
            continue
        if isinstance(config, dict):
            configs[unquote(quoted)] = config
    return scram_users_from(configs)
