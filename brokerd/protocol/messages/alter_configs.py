"""AlterConfigs (api key 33), versions 0-2."""

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
    Field("resources", Array(Struct(
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("configs", Array(Struct(
            Field("name", STRING),
            Field("value", STRING, nullable="0+"),
        ))),
    ))),
    Field("validate_only", BOOL),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("responses", Array(Struct(
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("resource_type", INT8),
        Field("resource_name", STRING),
    ))),
)

MESSAGE = ApiMessage(ApiKey.ALTER_CONFIGS, 0, 2, 2, REQUEST, RESPONSE)
