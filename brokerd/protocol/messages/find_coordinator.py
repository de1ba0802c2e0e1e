"""FindCoordinator (api key 10), versions 0-6."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT8, INT16, INT32, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("key", STRING, "0-3"),
    Field("key_type", INT8, "1+"),
    Field("coordinator_keys", Array(STRING), "4+"),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16, "0-3"),
    Field("error_message", STRING, "1-3", nullable="1-3"),
    Field("node_id", INT32, "0-3"),
    Field("host", STRING, "0-3"),
    Field("port", INT32, "0-3"),
    Field("coordinators", Array(Struct(
        Field("key", STRING, "4+"),
        Field("node_id", INT32, "4+"),
        Field("host", STRING, "4+"),
        Field("port", INT32, "4+"),
        Field("error_code", INT16, "4+"),
        Field("error_message", STRING, "4+", nullable="4+"),
    )), "4+"),
)

MESSAGE = ApiMessage(ApiKey.FIND_COORDINATOR, 0, 6, 3, REQUEST, RESPONSE)
