"""ElectLeaders (api key 43), versions 0-2."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT8, INT16, INT32, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("election_type", INT8, "1+"),
    Field("topic_partitions", Array(Struct(
        Field("topic", STRING),
        Field("partitions", Array(INT32)),
    )), nullable="0+"),
    Field("timeout_ms", INT32, default=60000),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16, "1+"),
    Field("replica_election_results", Array(Struct(
        Field("topic", STRING),
        Field("partition_result", Array(Struct(
            Field("partition_id", INT32),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
        ))),
    ))),
)

MESSAGE = ApiMessage(ApiKey.ELECT_LEADERS, 0, 2, 2, REQUEST, RESPONSE)
