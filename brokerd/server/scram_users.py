"""The SCRAM admin APIs' work (KIP-554): DescribeUserScramCredentials and
AlterUserScramCredentials, for operators only.

Credentials live where the control plane puts those of API keys: Kafka's
``/config/users/<url-encoded user>`` config JSON, one ``SCRAM-SHA-256``/``SCRAM-SHA-512`` key
per mechanism.  An alteration is a conditional read-modify-write of that node (quota keys in
it stay) followed by ``/config/changes/config_change_<seq>`` (``entity_path`` ``users/<user>``),
so every broker's watch picks it up and this broker applies it at once.  Such users are
operator principals (no tenant): they see the cluster unmapped and are subject to ACLs unless
listed in ``super.users``.  The control plane lists them (``tenants/scram_users.py``).

Describe reads this broker's credential cache, the copy logins are checked against.
Tenants are refused with CLUSTER_AUTHORIZATION_FAILED: their keys are the control plane's;
and no operator user may be named like a tenant's principal (``<tenant>.<name>``: it would
log in as an operator holding that principal's ACLs), INVALID_REQUEST.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING
from urllib.parse import quote

from brokerd.coordination.security_watch import CONFIG_CHANGES, USERS
from brokerd.coordination.zk_await import CoordinationUnavailableError
from brokerd.protocol import ErrorCode
from brokerd.security.scram_admin import (
    MECHANISM_TO_CODE,
    Alteration,
    ScramError,
    alterations_by_user,
    apply_alterations,
)

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.connection import Connection
    from brokerd.server.context import HandlerContext

Outcome = tuple[ErrorCode, str | None]
TENANT_REFUSAL: Outcome = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                           "SCRAM credentials are managed by operators; tenants use API keys")


def refusal(broker: HandlerContext, connection: Connection) -> Outcome | None:
    namespace = connection.namespace
    if namespace is not None and namespace.tenant is not None:
        return TENANT_REFUSAL
    if broker.coordinator is None:
        return ErrorCode.SECURITY_DISABLED, "this broker has no ZooKeeper to keep users in"
    return None


def describe(broker: HandlerContext,
             users: list[bodies.DescribeUserScramCredentialsRequestUser] | None
             ) -> list[bodies.DescribeUserScramCredentialsResponseResult]:
    """One result per user asked for (every SCRAM user when none are named)."""
    known = broker.security.scram_users()
    names = [user["name"] for user in users or ()]
    if not names:
        names = sorted(known)
    counts = Counter(names)
    results: list[bodies.DescribeUserScramCredentialsResponseResult] = []
    for name in dict.fromkeys(names):
        credentials = known.get(name)
        if counts[name] > 1:
            error: Outcome = (ErrorCode.DUPLICATE_RESOURCE, "Cannot describe SCRAM credentials "
                              "for the same user twice in a single request")
        elif credentials is None:
            error = (ErrorCode.RESOURCE_NOT_FOUND,
                     "Attempt to describe a user credential that does not exist")
        else:
            results.append({"user": name, "error_code": 0, "error_message": None,
                            "credential_infos": [
                                {"mechanism": MECHANISM_TO_CODE[mechanism],
                                 "iterations": credential.iterations}
                                for mechanism, credential in sorted(credentials.scram.items())]})
            continue
        results.append({"user": name, "error_code": int(error[0]), "error_message": error[1],
                        "credential_infos": []})
    return results


async def alter(broker: HandlerContext, body: bodies.AlterUserScramCredentialsRequest
                ) -> list[bodies.AlterUserScramCredentialsResponseResult]:
    """One result per user named in the request, in order of first mention."""
    grouped, refused = alterations_by_user(body)
    outcomes: dict[str, Outcome] = {user: (error.code, str(error))
                                    for user, error in refused.items()}
    for user, alterations in grouped.items():
        slug, dot, _ = user.partition(".")
        if dot and broker.security.is_tenant(slug):
            outcomes[user] = (ErrorCode.INVALID_REQUEST, f"{user!r} names a principal of tenant "
                              f"{slug!r}; tenants log in with the control plane's API keys")
            continue
        outcomes[user] = await _write(broker, user, alterations)
    order = [item["name"] for item in (*body["deletions"], *body["upsertions"])]
    return [{"user": user, "error_code": int(outcomes[user][0]),
             "error_message": outcomes[user][1]} for user in dict.fromkeys(order)]


async def _write(broker: HandlerContext, user: str, alterations: list[Alteration]) -> Outcome:
    quoted = quote(user, safe="")

    def rewrite(data: bytes | None) -> bytes | None:
        document = json.loads(data) if data else {}
        config = document.get("config") if isinstance(document, dict) else None
        updated = apply_alterations(config if isinstance(config, dict) else {}, alterations)
        return json.dumps({"version": 1, "config": updated}, sort_keys=True,
                          separators=(",", ":")).encode()

    notification = json.dumps({"version": 2, "entity_path": f"users/{quoted}"}).encode()
    assert broker.coordinator is not None
    try:
        _, after = await broker.coordinator.update_security_node(
            f"{USERS}/{quoted}", rewrite, f"{CONFIG_CHANGES}/config_change_", notification)
    except ScramError as exc:
        return exc.code, str(exc)
    except ValueError as exc:
        return ErrorCode.UNKNOWN_SERVER_ERROR, f"the config of user {user!r} is unreadable: {exc}"
    except CoordinationUnavailableError as exc:
        return ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)
    broker.security.user_changed(user, after)
    return ErrorCode.NONE, None
