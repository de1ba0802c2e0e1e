"""DescribeConfigs (32) v1-4: a topic's effective configuration and where each value came
from; a broker's static settings.

Sources (Kafka's ConfigSource): 1 DYNAMIC_TOPIC_CONFIG (set on the topic in ZooKeeper),
4 STATIC_BROKER_CONFIG (a ``log.*`` default from the broker's config file/flags),
5 DEFAULT_CONFIG (Kafka's built-in default).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey, ErrorCode
from brokerd.protocol.config_resources import BROKER_RESOURCE, TOPIC_RESOURCE
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.tenancy import ApiNames, Names
from brokerd.server.tenancy_rules import CLUSTER_DENIED, TOPIC_DENIED, broker_config, topic_config

if TYPE_CHECKING:
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.DESCRIBE_CONFIGS
MIN_VERSION, MAX_VERSION = 1, 4  # v0 removed by Kafka 4.0 (KIP-896)
# Where this API's names live and which ACL operations they need (server.tenancy).
TENANCY = ApiNames(
    request=(Names(("resources", "resource_name"), Rt.TOPIC, Op.DESCRIBE_CONFIGS,
                   TOPIC_DENIED, topic_config),
             Names(("resources", "resource_name"), Rt.CLUSTER, Op.DESCRIBE_CONFIGS,
                   CLUSTER_DENIED, broker_config)),
    response=(Names(("results", "resource_name"), Rt.TOPIC, only_if=topic_config),))
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5


def topic_config_entries(broker: HandlerContext, topic_config: dict[str, str]
                         ) -> list[tuple[str, str, int]]:
    """(name, value, source) of every config of a topic, sorted by name."""
    effective = broker.log_config_for(topic_config).to_props()
    effective.update(topic_config)  # keys outside LogConfig, stored verbatim
    entries = []
    for name, value in sorted(effective.items()):
        if name in topic_config:
            source = DYNAMIC_TOPIC_CONFIG
        elif name in broker.config.log_defaults:
            source = STATIC_BROKER_CONFIG
        else:
            source = DEFAULT_CONFIG
        entries.append((name, value, source))
    return entries


def broker_config_entries(broker: HandlerContext) -> list[tuple[str, str, int]]:
    config = broker.config
    static = {
        "broker.id": str(config.broker_id),
        "listeners": ",".join(e.url for e in config.listeners),
        "advertised.listeners": ",".join(e.url for e in config.advertised),
        "log.dirs": ",".join(str(d) for d in config.log_dirs),
        "auto.create.topics.enable": str(config.auto_create_topics_enable).lower(),
        "delete.topic.enable": str(config.delete_topic_enable).lower(),
        "num.partitions": str(config.num_partitions),
        "default.replication.factor": str(config.default_replication_factor),
        "socket.request.max.bytes": str(config.socket_request_max_bytes),
    }
    return [(name, value, STATIC_BROKER_CONFIG) for name, value in sorted(static.items())]


def _result(broker: HandlerContext, request: Request, resource: dict[str, Any]) -> dict[str, Any]:
    kind, name = resource["resource_type"], resource["resource_name"]
    result: dict[str, Any] = {"error_code": 0, "error_message": None, "resource_type": kind,
                              "resource_name": name, "configs": []}
    if kind == TOPIC_RESOURCE:
        metadata = broker.cache.topic(name)
        if metadata is None:
            return {**result, "error_code": int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                    "error_message": f"no topic {name!r}"}
        entries = topic_config_entries(broker, metadata.config)
    elif kind == BROKER_RESOURCE and name in ("", str(broker.config.broker_id)):
        entries = broker_config_entries(broker)
    else:
        return {**result, "error_code": int(ErrorCode.INVALID_REQUEST),
                "error_message": f"cannot describe resource type {kind} {name!r}"}
    keys = resource["configuration_keys"]
    result["configs"] = [
        {"name": key, "value": value, "read_only": kind == BROKER_RESOURCE, "config_source": source,
         "is_default": source == DEFAULT_CONFIG, "is_sensitive": False,
         "synonyms": [{"name": key, "value": value, "source": source}]
         if request.body["include_synonyms"] else [],
         "config_type": 0, "documentation": None}
        for key, value, source in entries if keys is None or key in keys
    ]
    return result


async def handle(broker: HandlerContext, request: Request) -> dict[str, Any]:
    return {"throttle_time_ms": 0,
            "results": [_result(broker, request, r) for r in request.body["resources"]]}
