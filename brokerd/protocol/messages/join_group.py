"""JoinGroup (api key 11), versions 0-9."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import (
    BOOL,
    BYTES,
    INT16,
    INT32,
    STRING,
    ApiMessage,
    Array,
    Field,
    Struct,
)

REQUEST = Struct(
    Field("group_id", STRING),
    Field("session_timeout_ms", INT32),
    Field("rebalance_timeout_ms", INT32, "1+", default=-1),
    Field("member_id", STRING),
    Field("group_instance_id", STRING, "5+", nullable="5+"),
    Field("protocol_type", STRING),
    Field("protocols", Array(Struct(
        Field("name", STRING),
        Field("metadata", BYTES),
    ))),
    Field("reason", STRING, "8+", nullable="8+"),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32, "2+"),
    Field("error_code", INT16),
    Field("generation_id", INT32, default=-1),
    Field("protocol_type", STRING, "7+", nullable="7+"),
    Field("protocol_name", STRING, nullable="7+"),
    Field("leader", STRING),
    Field("skip_assignment", BOOL, "9+"),
    Field("member_id", STRING),
    Field("members", Array(Struct(
        Field("member_id", STRING),
        Field("group_instance_id", STRING, "5+", nullable="5+"),
        Field("metadata", BYTES),
    ))),
)

MESSAGE = ApiMessage(ApiKey.JOIN_GROUP, 0, 9, 6, REQUEST, RESPONSE)
