"""DescribeProducers (api key 61), version 0."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, INT32, INT64, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("topics", Array(Struct(
        Field("name", STRING),
        Field("partition_indexes", Array(INT32)),
    ))),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("topics", Array(Struct(
        Field("name", STRING),
        Field("partitions", Array(Struct(
            Field("partition_index", INT32),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
            Field("active_producers", Array(Struct(
                Field("producer_id", INT64),
                Field("producer_epoch", INT32),
                Field("last_sequence", INT32, default=-1),
                Field("last_timestamp", INT64, default=-1),
                Field("coordinator_epoch", INT32),
                Field("current_txn_start_offset", INT64, default=-1),
            ))),
        ))),
    ))),
)

MESSAGE = ApiMessage(ApiKey.DESCRIBE_PRODUCERS, 0, 0, 0, REQUEST, RESPONSE)
