"""OffsetForLeaderEpoch (api key 23), versions 0-4."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, INT32, INT64, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("replica_id", INT32, "3+", default=-2),
    Field("topics", Array(Struct(
        Field("topic", STRING),
        Field("partitions", Array(Struct(
            Field("partition", INT32),
            Field("current_leader_epoch", INT32, "2+", default=-1),
            Field("leader_epoch", INT32),
        ))),
    ))),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32, "2+"),
    Field("topics", Array(Struct(
        Field("topic", STRING),
        Field("partitions", Array(Struct(
            Field("error_code", INT16),
            Field("partition", INT32),
            Field("leader_epoch", INT32, "1+", default=-1),
            Field("end_offset", INT64, default=-1),
        ))),
    ))),
)

MESSAGE = ApiMessage(ApiKey.OFFSET_FOR_LEADER_EPOCH, 0, 4, 4, REQUEST, RESPONSE)
