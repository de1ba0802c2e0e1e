"""DeleteTopics (api key 20), versions 0-6."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, INT32, STRING, UUID, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("topics", Array(Struct(
        Field("name", STRING, "6+", nullable="6+"),
        Field("topic_id", UUID, "6+"),
    )), "6+"),
    Field("topic_names", Array(STRING), "0-5"),
    Field("timeout_ms", INT32),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32, "1+"),
    Field("responses", Array(Struct(
        Field("name", STRING, nullable="6+"),
        Field("topic_id", UUID, "6+"),
        Field("error_code", INT16),
        Field("error_message", STRING, "5+", nullable="5+"),
    ))),
)

MESSAGE = ApiMessage(ApiKey.DELETE_TOPICS, 0, 6, 4, REQUEST, RESPONSE)
