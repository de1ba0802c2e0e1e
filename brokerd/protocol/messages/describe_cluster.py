"""DescribeCluster (api key 60), versions 0-1."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import (
    BOOL,
    INT8,
    INT16,
    INT32,
    STRING,
    ApiMessage,
    Array,
    Field,
    Struct,
)

REQUEST = Struct(
    Field("include_cluster_authorized_operations", BOOL),
    Field("endpoint_type", INT8, "1+", default=1),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+"),
    Field("endpoint_type", INT8, "1+", default=1),
    Field("cluster_id", STRING),
    Field("controller_id", INT32, default=-1),
    Field("brokers", Array(Struct(
        Field("broker_id", INT32),
        Field("host", STRING),
        Field("port", INT32),
        Field("rack", STRING, nullable="0+"),
    ))),
    Field("cluster_authorized_operations", INT32, default=-2147483648),
)

MESSAGE = ApiMessage(ApiKey.DESCRIBE_CLUSTER, 0, 1, 0, REQUEST, RESPONSE)
