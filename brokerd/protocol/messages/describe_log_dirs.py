"""DescribeLogDirs (api key 35), versions 1-4."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import (
    BOOL,
    INT16,
    INT32,
    INT64,
    STRING,
    ApiMessage,
    Array,
    Field,
    Struct,
)

REQUEST = Struct(
    Field("topics", Array(Struct(
        Field("topic", STRING),
        Field("partitions", Array(INT32)),
    )), nullable="0+"),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16, "3+"),
    Field("results", Array(Struct(
        Field("error_code", INT16),
        Field("log_dir", STRING),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("partition_size", INT64),
                Field("offset_lag", INT64),
                Field("is_future_key", BOOL),
            ))),
        ))),
        Field("total_bytes", INT64, "4+", default=-1),
        Field("usable_bytes", INT64, "4+", default=-1),
    ))),
)

MESSAGE = ApiMessage(ApiKey.DESCRIBE_LOG_DIRS, 1, 4, 2, REQUEST, RESPONSE)
