"""OffsetCommit (api key 8), versions 0-9 (v9: the same fields; a KIP-848 member sends its
member epoch in ``generation_id_or_member_epoch``)."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, INT32, INT64, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("group_id", STRING),
    Field("generation_id_or_member_epoch", INT32, "1+", default=-1),
    Field("member_id", STRING, "1+"),
    Field("group_instance_id", STRING, "7+", nullable="7+"),
    Field("retention_time_ms", INT64, "2-4", default=-1),
    Field("topics", Array(Struct(
        Field("name", STRING),
        Field("partitions", Array(Struct(
            Field("partition_index", INT32),
            Field("committed_offset", INT64),
            Field("committed_leader_epoch", INT32, "6+", default=-1),
            Field("commit_timestamp", INT64, "1", default=-1),
            Field("committed_metadata", STRING, nullable="0+"),
        ))),
    ))),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32, "3+"),
    Field("topics", Array(Struct(
        Field("name", STRING),
        Field("partitions", Array(Struct(
            Field("partition_index", INT32),
            Field("error_code", INT16),
        ))),
    ))),
)

MESSAGE = ApiMessage(ApiKey.OFFSET_COMMIT, 0, 9, 8, REQUEST, RESPONSE)
