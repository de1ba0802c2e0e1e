"""CreatePartitions (api key 37), versions 0-3."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import BOOL, INT16, INT32, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("topics", Array(Struct(
        Field("name", STRING),
        Field("count", INT32),
        Field("assignments", Array(Struct(
            Field("broker_ids", Array(INT32)),
        )), nullable="0+"),
    ))),
    Field("timeout_ms", INT32),
    Field("validate_only", BOOL),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("results", Array(Struct(
        Field("name", STRING),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
    ))),
)

MESSAGE = ApiMessage(ApiKey.CREATE_PARTITIONS, 0, 3, 2, REQUEST, RESPONSE)
