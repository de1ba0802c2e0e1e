"""DescribeClientQuotas (api key 48), versions 0-1."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import (
    BOOL,
    FLOAT64,
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
    Field("components", Array(Struct(
        Field("entity_type", STRING),
        Field("match_type", INT8),
        Field("match", STRING, nullable="0+"),
    ))),
    Field("strict", BOOL),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+"),
    Field("entries", Array(Struct(
        Field("entity", Array(Struct(
            Field("entity_type", STRING),
            Field("entity_name", STRING, nullable="0+"),
        ))),
        Field("values", Array(Struct(
            Field("key", STRING),
            Field("value", FLOAT64),
        ))),
    )), nullable="0+"),
)

MESSAGE = ApiMessage(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1, 1, REQUEST, RESPONSE)
