"""ListOffsets (api key 2), versions 0-7."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import (
    INT8,
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
    Field("replica_id", INT32),
    Field("isolation_level", INT8, "2+"),
    Field("topics", Array(Struct(
        Field("name", STRING),
        Field("partitions", Array(Struct(
            Field("partition_index", INT32),
            Field("current_leader_epoch", INT32, "4+", default=-1),
            Field("timestamp", INT64),
            Field("max_num_offsets", INT32, "0", default=1),
        ))),
    ))),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32, "2+"),
    Field("topics", Array(Struct(
        Field("name", STRING),
        Field("partitions", Array(Struct(
            Field("partition_index", INT32),
            Field("error_code", INT16),
            Field("old_style_offsets", Array(INT64), "0"),
            Field("timestamp", INT64, "1+", default=-1),
            Field("offset", INT64, "1+", default=-1),
            Field("leader_epoch", INT32, "4+", default=-1),
        ))),
    ))),
)

MESSAGE = ApiMessage(ApiKey.LIST_OFFSETS, 0, 7, 6, REQUEST, RESPONSE)
