"""DeleteRecords (api key 21), versions 0-2."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, INT32, INT64, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("topics", Array(Struct(
        Field("name", STRING),
        Field("partitions", Array(Struct(
            Field("partition_index", INT32),
            Field("offset", INT64),
        ))),
    ))),
    Field("timeout_ms", INT32),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("topics", Array(Struct(
        Field("name", STRING),
        Field("partitions", Array(Struct(
            Field("partition_index", INT32),
            Field("low_watermark", INT64),
            Field("error_code", INT16),
        ))),
    ))),
)

MESSAGE = ApiMessage(ApiKey.DELETE_RECORDS, 0, 2, 2, REQUEST, RESPONSE)
