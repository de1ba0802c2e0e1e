"""AlterConfigs (33) v0-2: the legacy, non-incremental config change.

Each resource's ``configs`` *replace* its whole stored config (Kafka's semantics: a key left
out is removed, a null value is refused), for a topic (``/config/topics/<t>``) or a BROKER
resource's dynamic layer (``/config/brokers/<id>`` or ``<default>`` for ``""``); validation
and writes are :mod:`brokerd.server.config_admin`'s, shared with IncrementalAlterConfigs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey, ErrorCode
from brokerd.protocol.config_resources import BROKER_RESOURCE, TOPIC_RESOURCE
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server import config_admin
from brokerd.server.tenancy import ApiNames, Names
from brokerd.server.tenancy_rules import CLUSTER_DENIED, TOPIC_DENIED, broker_config, topic_config

if TYPE_CHECKING:
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.ALTER_CONFIGS
MIN_VERSION, MAX_VERSION = 0, 2
# Where this API's names live and which ACL operations they need (server.tenancy).
TENANCY = ApiNames(
    request=(Names(("resources", "resource_name"), Rt.TOPIC, Op.ALTER_CONFIGS,
                   TOPIC_DENIED, topic_config),
             Names(("resources", "resource_name"), Rt.CLUSTER, Op.ALTER_CONFIGS,
                   CLUSTER_DENIED, broker_config)),
    response=(Names(("responses", "resource_name"), Rt.TOPIC, only_if=topic_config),))


def replacement(configs: list[dict[str, Any]]) -> dict[str, str]:
    """The new config of a resource: exactly the entries given (later ones win)."""
    nulls = sorted(entry["name"] for entry in configs if entry["value"] is None)
    if nulls:
        raise ValueError(f"Null value not supported for : {', '.join(nulls)}")
    return {entry["name"]: entry["value"] for entry in configs}


async def _alter(broker: HandlerContext, resource: dict[str, Any], validate_only: bool
                 ) -> dict[str, Any]:
    kind, name = resource["resource_type"], resource["resource_name"]
    result = {"error_code": 0, "error_message": None, "resource_type": kind,
              "resource_name": name}
    configs = resource["configs"]
    if kind == TOPIC_RESOURCE:
        outcome = await config_admin.alter_topic_config(
            broker, name, lambda current: replacement(configs), validate_only)
    elif kind == BROKER_RESOURCE:
        outcome = await config_admin.alter_broker_config(
            broker, name, lambda current: replacement(configs), validate_only)
    else:
        return {**result, "error_code": int(ErrorCode.INVALID_REQUEST),
                "error_message": f"cannot alter configs of resource type {kind}"}
    return {**result, "error_code": int(outcome.error_code),
            "error_message": outcome.error_message}


async def handle(broker: HandlerContext, request: Request) -> dict[str, Any]:
    validate_only = request.body["validate_only"]
    return {"throttle_time_ms": 0,
            "responses": [await _alter(broker, r, validate_only)
                          for r in request.body["resources"]]}
