"""Metadata (api key 3), versions 0-12."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import (
    BOOL,
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
        Field("topic_id", UUID, "10+"),
        Field("name", STRING, nullable="10+"),
    )), nullable="1+"),
    Field("allow_auto_topic_creation", BOOL, "4+", default=True),
    Field("include_cluster_authorized_operations", BOOL, "8-10"),
    Field("include_topic_authorized_operations", BOOL, "8+"),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32, "3+"),
    Field("brokers", Array(Struct(
        Field("node_id", INT32),
        Field("host", STRING),
        Field("port", INT32),
        Field("rack", STRING, "1+", nullable="1+"),
    ))),
    Field("cluster_id", STRING, "2+", nullable="2+"),
    Field("controller_id", INT32, "1+", default=-1),
    Field("topics", Array(Struct(
        Field("error_code", INT16),
        Field("name", STRING, nullable="12+"),
        Field("topic_id", UUID, "10+"),
        Field("is_internal", BOOL, "1+"),
        Field("partitions", Array(Struct(
            Field("error_code", INT16),
            Field("partition_index", INT32),
            Field("leader_id", INT32),
            Field("leader_epoch", INT32, "7+", default=-1),
            Field("replica_nodes", Array(INT32)),
            Field("isr_nodes", Array(INT32)),
            Field("offline_replicas", Array(INT32), "5+"),
        ))),
        Field("topic_authorized_operations", INT32, "8+", default=-2147483648),
    ))),
    Field("cluster_authorized_operations", INT32, "8-10", default=-2147483648),
)

MESSAGE = ApiMessage(ApiKey.METADATA, 0, 12, 9, REQUEST, RESPONSE)
