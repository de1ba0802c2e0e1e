"""DeleteGroups (api key 42), versions 0-2."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, INT32, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("groups_names", Array(STRING)),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("results", Array(Struct(
        Field("group_id", STRING),
        Field("error_code", INT16),
    ))),
)

MESSAGE = ApiMessage(ApiKey.DELETE_GROUPS, 0, 2, 2, REQUEST, RESPONSE)
