"""ListPartitionReassignments (api key 46), version 0."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, INT32, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("timeout_ms", INT32, default=60000),
    Field("topics", Array(Struct(
        Field("name", STRING),
        Field("partition_indexes", Array(INT32)),
    )), nullable="0+", default=None),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+"),
    Field("topics", Array(Struct(
        Field("name", STRING),
        Field("partitions", Array(Struct(
            Field("partition_index", INT32),
            Field("replicas", Array(INT32)),
            Field("adding_replicas", Array(INT32)),
            Field("removing_replicas", Array(INT32)),
        ))),
    ))),
)

MESSAGE = ApiMessage(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0, 0, REQUEST, RESPONSE)
