"""Config changes shared by AlterConfigs (33) and IncrementalAlterConfigs (44): validate a
topic's or a broker's new config and write it to ZooKeeper.

A topic's config goes to ``/config/topics/<t>``; every broker applies it through its watch.
A broker's dynamic layer goes to ``/config/brokers/<id>`` (resource name = this broker's id;
Kafka refuses another broker's id: the client must ask that broker) or
``/config/brokers/<default>`` (resource name ``""``), with a ``/config/changes``
notification; this broker applies it at once, the others through their watches.  Either way
the answer is in the protocol's terms: INVALID_CONFIG for a bad topic config,
INVALID_REQUEST for a bad broker config (Kafka's choice), REQUEST_TIMED_OUT when ZooKeeper
does not answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from brokerd.coordination.zk_await import CoordinationUnavailableError
from brokerd.coordination.znodes import DEFAULT_BROKER_CONFIG
from brokerd.protocol import ErrorCode
from brokerd.protocol.config_resources import BROKER_RESOURCE, TOPIC_RESOURCE
from brokerd.server import broker_configs as rules
from brokerd.server import topic_admin
from brokerd.server.topic_admin import AdminResult

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.context import HandlerContext

Change = Callable[[dict[str, str]], dict[str, str]]


async def alter_topic_config(broker: HandlerContext, name: str, change: Change,
                             validate_only: bool) -> AdminResult:
    """Apply ``change`` to a topic's stored config (it may raise ValueError: INVALID_REQUEST)."""
    metadata = broker.cache.topic(name)
    if metadata is None:
        return AdminResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
    try:
        updated = change(dict(metadata.config))
    except ValueError as exc:
        return AdminResult(ErrorCode.INVALID_REQUEST, str(exc))
    check = topic_admin.validate_configs(broker, updated)
    if not check.ok or validate_only:
        return check
    assert broker.coordinator is not None
    try:
        await broker.coordinator.set_topic_config(name, updated)
    except CoordinationUnavailableError as exc:
        return AdminResult(ErrorCode.REQUEST_TIMED_OUT, str(exc))
    return AdminResult()


async def alter_broker_config(broker: HandlerContext, resource_name: str, change: Change,
                              validate_only: bool) -> AdminResult:
    """Apply ``change`` to this broker's dynamic layer (or the cluster default's)."""
    live = broker.live_configs
    own_id = str(broker.config.broker_id)
    if resource_name == "":
        entity, current = DEFAULT_BROKER_CONFIG, live.default_layer
    elif resource_name == own_id:
        entity, current = own_id, live.own_layer
    else:
        return AdminResult(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected "
                                                      f"{own_id}, but received {resource_name}")
    try:
        updated = change(dict(current))
        if entity == DEFAULT_BROKER_CONFIG:
            rules.validate_layer(updated, live.static, {})
            rules.validate_layer(live.own_layer, live.static, updated)
        else:
            rules.validate_layer(updated, live.static, live.default_layer)
    except ValueError as exc:  # InvalidBrokerConfig included
        return AdminResult(ErrorCode.INVALID_REQUEST, str(exc))
    if validate_only:
        return AdminResult()
    assert broker.coordinator is not None
    try:
        await broker.coordinator.set_broker_config(entity, updated)
    except CoordinationUnavailableError as exc:
        return AdminResult(ErrorCode.REQUEST_TIMED_OUT, str(exc))
    if entity == DEFAULT_BROKER_CONFIG:
        live.changed(updated, live.own_layer)  # the watch delivers the same a moment later
    else:
        live.changed(live.default_layer, updated)
    return AdminResult()


def effective_broker_props(broker: HandlerContext) -> dict[str, str]:
    """The current values, the base of APPEND/SUBTRACT on a key a layer does not set."""
    live = broker.live_configs
    defaults = {name: key.default for name, key in rules.CATALOG.items()
                if key.default is not None}
    return {**defaults, **rules.effective_props(live.static, live.default_layer,
                                                live.own_layer)}


async def alter_resource(
        broker: HandlerContext,
        resource: bodies.AlterConfigsRequestResource | bodies.IncrementalAlterConfigsRequestResource,
        change: Change, validate_only: bool) -> bodies.AlterConfigsResponseResponse:
    """One resource's answer (AlterConfigs and IncrementalAlterConfigs alike)."""
    kind, name = resource["resource_type"], resource["resource_name"]
    if kind == TOPIC_RESOURCE:
        outcome = await alter_topic_config(broker, name, change, validate_only)
    elif kind == BROKER_RESOURCE:
        outcome = await alter_broker_config(broker, name, change, validate_only)
    else:
        outcome = AdminResult(ErrorCode.INVALID_REQUEST,
                              f"cannot alter configs of resource type {kind}")
    return {"error_code": int(outcome.error_code), "error_message": outcome.error_message,
            "resource_type": kind, "resource_name": name}
