"""AlterPartitionReassignments (api key 45), versions 0-1."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import BOOL, INT16, INT32, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("timeout_ms", INT32, default=60000),
    Field("allow_replication_factor_change", BOOL, "1+", default=True),
    Field("topics", Array(Struct(
        Field("name", STRING),
        Field("partitions", Array(Struct(
            Field("partition_index", INT32),
            Field("replicas", Array(INT32), nullable="0+", default=None),
        ))),
    ))),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("allow_replication_factor_change", BOOL, "1+", default=True),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+"),
    Field("responses", Array(Struct(
        Field("name", STRING),
        Field("partitions", Array(Struct(
            Field("partition_index", INT32),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
        ))),
    ))),
)

MESSAGE = ApiMessage(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1, 0, REQUEST, RESPONSE)
