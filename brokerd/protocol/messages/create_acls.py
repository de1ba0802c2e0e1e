"""CreateAcls (api key 30), versions 1-3 (Kafka 4.0 removed v0, KIP-896)."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import (
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
    Field("creations", Array(Struct(
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("resource_pattern_type", INT8, "1+", default=3),
        Field("principal", STRING),
        Field("host", STRING),
        Field("operation", INT8),
        Field("permission_type", INT8),
    ))),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("results", Array(Struct(
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
    ))),
)

MESSAGE = ApiMessage(ApiKey.CREATE_ACLS, 1, 3, 2, REQUEST, RESPONSE)
