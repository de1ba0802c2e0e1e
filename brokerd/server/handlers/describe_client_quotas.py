"""DescribeClientQuotas (48) v0-1: the client quotas configured for users and client ids
(KIP-546), as ``kafka-configs --describe --entity-type users|clients`` asks.

Kafka's rules: the caller needs DescribeConfigs on the cluster (else
CLUSTER_AUTHORIZATION_FAILED; tenants never have it: their plans' quotas are in their
console and REST API); a filter naming an entity type twice, an unknown type or match
type, or an exact match without a name is INVALID_REQUEST.  Answered by any broker from
its own copy of ``/config/users|clients/…`` (the quota watch), with the names as stored:
a tenant user's is ``<tenant>.<name>``.  The matching is :mod:`brokerd.quota.describe`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from brokerd.protocol import ApiKey, ErrorCode
from brokerd.quota.describe import Component, InvalidFilter, describe
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.tenancy import ApiNames, Gate
from brokerd.server.tenancy_rules import CLUSTER_DENIED, error_only

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.DESCRIBE_CLIENT_QUOTAS
MIN_VERSION, MAX_VERSION = 0, 1
TENANCY = ApiNames(gates=(Gate(Rt.CLUSTER, Op.DESCRIBE_CONFIGS, CLUSTER_DENIED, error_only),))


async def handle(broker: HandlerContext, request: Request[bodies.DescribeClientQuotasRequest]
                 ) -> bodies.DescribeClientQuotasResponse:
    body = request.body
    components = [Component(c["entity_type"], c["match_type"], c["match"])
                  for c in body["components"]]
    try:
        found = describe(broker.quotas.store.entities(), components, body["strict"])
    except InvalidFilter as exc:
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.INVALID_REQUEST),
                "error_message": str(exc), "entries": None}
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "entries": [
        {"entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity],
         "values": [{"key": key, "value": value} for key, value in sorted(values.items())]}
        for entity, values in found]}
