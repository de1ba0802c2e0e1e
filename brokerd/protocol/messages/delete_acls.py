"""DeleteAcls (api key 31), versions 1-3 (Kafka 4.0 removed v0, KIP-896)."""

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
    Field("filters", Array(Struct(
        Field("resource_type_filter", INT8),
        Field("resource_name_filter", STRING, nullable="0+"),
        Field("pattern_type_filter", INT8, "1+", default=3),
        Field("principal_filter", STRING, nullable="0+"),
        Field("host_filter", STRING, nullable="0+"),
        Field("operation", INT8),
        Field("permission_type", INT8),
    ))),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("filter_results", Array(Struct(
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("matching_acls", Array(Struct(
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("pattern_type", INT8, "1+", default=3),
            Field("principal", STRING),
            Field("host", STRING),
            Field("operation", INT8),
            Field("permission_type", INT8),
        ))),
    ))),
)

MESSAGE = ApiMessage(ApiKey.DELETE_ACLS, 1, 3, 2, REQUEST, RESPONSE)
