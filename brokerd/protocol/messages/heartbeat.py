"""Heartbeat (api key 12), versions 0-4."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, INT32, STRING, ApiMessage, Field, Struct

REQUEST = Struct(
    Field("group_id", STRING),
    Field("generation_id", INT32),
    Field("member_id", STRING),
    Field("group_instance_id", STRING, "3+", nullable="3+"),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16),
)

MESSAGE = ApiMessage(ApiKey.HEARTBEAT, 0, 4, 4, REQUEST, RESPONSE)
