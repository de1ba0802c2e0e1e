"""ListGroups (api key 16), versions 0-5."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, INT32, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("states_filter", Array(STRING), "4+"),
    Field("types_filter", Array(STRING), "5+"),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16),
    Field("groups", Array(Struct(
        Field("group_id", STRING),
        Field("protocol_type", STRING),
        Field("group_state", STRING, "4+"),
        Field("group_type", STRING, "5+"),
    ))),
)

MESSAGE = ApiMessage(ApiKey.LIST_GROUPS, 0, 5, 3, REQUEST, RESPONSE)
