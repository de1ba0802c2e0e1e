"""SyncGroup (api key 14), versions 0-5."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import BYTES, INT16, INT32, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("group_id", STRING),
    Field("generation_id", INT32),
    Field("member_id", STRING),
    Field("group_instance_id", STRING, "3+", nullable="3+"),
    Field("protocol_type", STRING, "5+", nullable="5+"),
    Field("protocol_name", STRING, "5+", nullable="5+"),
    Field("assignments", Array(Struct(
        Field("member_id", STRING),
        Field("assignment", BYTES),
    ))),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16),
    Field("protocol_type", STRING, "5+", nullable="5+"),
    Field("protocol_name", STRING, "5+", nullable="5+"),
    Field("assignment", BYTES),
)

MESSAGE = ApiMessage(ApiKey.SYNC_GROUP, 0, 5, 4, REQUEST, RESPONSE)
