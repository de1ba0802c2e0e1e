"""OffsetDelete (api key 47), versions 0-0."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, INT32, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("group_id", STRING),
    Field("topics", Array(Struct(
        Field("name", STRING),
        Field("partitions", Array(Struct(
            Field("partition_index", INT32),
        ))),
    ))),
)

RESPONSE = Struct(
    Field("error_code", INT16),
    Field("throttle_time_ms", INT32),
    Field("topics", Array(Struct(
        Field("name", STRING),
        Field("partitions", Array(Struct(
            Field("partition_index", INT32),
            Field("error_code", INT16),
        ))),
    ))),
)

MESSAGE = ApiMessage(ApiKey.OFFSET_DELETE, 0, 0, None, REQUEST, RESPONSE)
