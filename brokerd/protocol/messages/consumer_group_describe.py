"""ConsumerGroupDescribe (api key 69), versions 0-1 (KIP-848)."""

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
    Field("group_ids", Array(STRING)),
    Field("include_authorized_operations", BOOL),
)

_ASSIGNMENT = Struct(
    Field("topic_partitions", Array(Struct(
        Field("topic_id", UUID),
        Field("topic_name", STRING),
        Field("partitions", Array(INT32)),
    ))),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("groups", Array(Struct(
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("group_id", STRING),
        Field("group_state", STRING),
        Field("group_epoch", INT32),
        Field("assignment_epoch", INT32),
        Field("assignor_name", STRING),
        Field("members", Array(Struct(
            Field("member_id", STRING),
            Field("instance_id", STRING, nullable="0+", default=None),
            Field("rack_id", STRING, nullable="0+", default=None),
            Field("member_epoch", INT32),
            Field("client_id", STRING),
            Field("client_host", STRING),
            Field("subscribed_topic_names", Array(STRING)),
            Field("subscribed_topic_regex", STRING, nullable="0+", default=None),
            Field("assignment", _ASSIGNMENT),
            Field("target_assignment", _ASSIGNMENT),
            Field("member_type", INT8, "1+", default=-1),
        ))),
        Field("authorized_operations", INT32, default=-2147483648),
    ))),
)

MESSAGE = ApiMessage(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, 0, REQUEST, RESPONSE)
