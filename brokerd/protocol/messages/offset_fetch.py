"""OffsetFetch (api key 9), versions 0-9."""

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
    Field("group_id", STRING, "0-7"),
    Field("topics", Array(Struct(
        Field("name", STRING, "0-7"),
        Field("partition_indexes", Array(INT32), "0-7"),
    )), "0-7", nullable="2-7"),
    Field("groups", Array(Struct(
        Field("group_id", STRING, "8+"),
        Field("member_id", STRING, "9+", nullable="9+", default=None),
        Field("member_epoch", INT32, "9+", default=-1),
        Field("topics", Array(Struct(
            Field("name", STRING, "8+"),
            Field("partition_indexes", Array(INT32), "8+"),
        )), "8+", nullable="8+"),
    )), "8+"),
    Field("require_stable", BOOL, "7+"),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32, "3+"),
    Field("topics", Array(Struct(
        Field("name", STRING, "0-7"),
        Field("partitions", Array(Struct(
            Field("partition_index", INT32, "0-7"),
            Field("committed_offset", INT64, "0-7"),
            Field("committed_leader_epoch", INT32, "5-7", default=-1),
            Field("metadata", STRING, "0-7", nullable="0-7"),
            Field("error_code", INT16, "0-7"),
        )), "0-7"),
    )), "0-7"),
    Field("error_code", INT16, "2-7"),
    Field("groups", Array(Struct(
        Field("group_id", STRING, "8+"),
        Field("topics", Array(Struct(
            Field("name", STRING, "8+"),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32, "8+"),
                Field("committed_offset", INT64, "8+"),
                Field("committed_leader_epoch", INT32, "8+", default=-1),
                Field("metadata", STRING, "8+", nullable="8+"),
                Field("error_code", INT16, "8+"),
            )), "8+"),
        )), "8+"),
        Field("error_code", INT16, "8+"),
    )), "8+"),
)

MESSAGE = ApiMessage(ApiKey.OFFSET_FETCH, 0, 9, 6, REQUEST, RESPONSE)
