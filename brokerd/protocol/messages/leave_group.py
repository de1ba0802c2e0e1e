"""LeaveGroup (api key 13), versions 0-5."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, INT32, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("group_id", STRING),
    Field("member_id", STRING, "0-2"),
    Field("members", Array(Struct(
        Field("member_id", STRING, "3+"),
        Field("group_instance_id", STRING, "3+", nullable="3+"),
        Field("reason", STRING, "5+", nullable="5+"),
    )), "3+"),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16),
    Field("members", Array(Struct(
        Field("member_id", STRING, "3+"),
        Field("group_instance_id", STRING, "3+", nullable="3+"),
        Field("error_code", INT16, "3+"),
    )), "3+"),
)

MESSAGE = ApiMessage(ApiKey.LEAVE_GROUP, 0, 5, 4, REQUEST, RESPONSE)
