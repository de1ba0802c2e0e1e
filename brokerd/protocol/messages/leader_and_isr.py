"""LeaderAndIsr (api key 4), version 5 (the controller's decided partition states, pushed to
the brokers hosting their replicas; v5 names topics by id too, KIP-516).  Kafka 4.0 removed
the API with ZooKeeper mode; this is Kafka 3.x's ZooKeeper-mode message."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import (
    BOOL,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UUID,
    ApiMessage,
    Array,
    Field,
    Struct,
)

REQUEST = Struct(
    Field("controller_id", INT32),
    Field("controller_epoch", INT32),
    Field("broker_epoch", INT64, default=-1),
    Field("type", INT8),
    Field("topic_states", Array(Struct(
        Field("topic_name", STRING),
        Field("topic_id", UUID),
        Field("partition_states", Array(Struct(
            Field("partition_index", INT32),
            Field("controller_epoch", INT32),
            Field("leader", INT32),
            Field("leader_epoch", INT32),
            Field("isr", Array(INT32)),
            Field("partition_epoch", INT32),
            Field("replicas", Array(INT32)),
            Field("adding_replicas", Array(INT32)),
            Field("removing_replicas", Array(INT32)),
            Field("is_new", BOOL, default=False),
        ))),
    ))),
    Field("live_leaders", Array(Struct(
        Field("broker_id", INT32),
        Field("host_name", STRING),
        Field("port", INT32),
    ))),
)

RESPONSE = Struct(
    Field("error_code", INT16),
    Field("topics", Array(Struct(
        Field("topic_id", UUID),
        Field("partition_errors", Array(Struct(
            Field("partition_index", INT32),
            Field("error_code", INT16),
        ))),
    ))),
)

MESSAGE = ApiMessage(ApiKey.LEADER_AND_ISR, 5, 5, 4, REQUEST, RESPONSE)
