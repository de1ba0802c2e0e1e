"""CreateTopics (api key 19), versions 0-7."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import (
    BOOL,
    INT8,
    INT16,
    INT32,
    STRING,
    UUID,
    ApiMessage,
    Array,
    Field,
    Struct,
)

REQUEST = Struct(
    Field("topics", Array(Struct(
        Field("name", STRING),
        Field("num_partitions", INT32),
        Field("replication_factor", INT16),
        Field("assignments", Array(Struct(
            Field("partition_index", INT32),
            Field("broker_ids", Array(INT32)),
        ))),
        Field("configs", Array(Struct(
            Field("name", STRING),
            Field("value", STRING, nullable="0+"),
        ))),
    ))),
    Field("timeout_ms", INT32, default=60000),
    Field("validate_only", BOOL, "1+"),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32, "2+"),
    Field("topics", Array(Struct(
        Field("name", STRING),
        Field("topic_id", UUID, "7+"),
        Field("error_code", INT16),
        Field("error_message", STRING, "1+", nullable="0+"),
        Field("topic_config_error_code", INT16, "5+", tag=0, tagged="5+"),
        Field("num_partitions", INT32, "5+", default=-1),
        Field("replication_factor", INT16, "5+", default=-1),
        Field("configs", Array(Struct(
            Field("name", STRING, "5+"),
            Field("value", STRING, "5+", nullable="5+"),
            Field("read_only", BOOL, "5+"),
            Field("config_source", INT8, "5+", default=-1),
            Field("is_sensitive", BOOL, "5+"),
        )), "5+", nullable="5+"),
    ))),
)

MESSAGE = ApiMessage(ApiKey.CREATE_TOPICS, 0, 7, 5, REQUEST, RESPONSE)
