"""ConsumerGroupHeartbeat (api key 68), versions 0-1 (KIP-848)."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, INT32, STRING, UUID, ApiMessage, Array, Field, Struct

_TOPIC_PARTITIONS = Struct(
    Field("topic_id", UUID),
    Field("partitions", Array(INT32)),
)

REQUEST = Struct(
    Field("group_id", STRING),
    Field("member_id", STRING),
    Field("member_epoch", INT32),
    Field("instance_id", STRING, nullable="0+", default=None),
    Field("rack_id", STRING, nullable="0+", default=None),
    Field("rebalance_timeout_ms", INT32, default=-1),
    Field("subscribed_topic_names", Array(STRING), nullable="0+", default=None),
    Field("subscribed_topic_regex", STRING, "1+", nullable="1+", default=None),
    Field("server_assignor", STRING, nullable="0+", default=None),
    Field("topic_partitions", Array(_TOPIC_PARTITIONS), nullable="0+", default=None),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("member_id", STRING, nullable="0+", default=None),
    Field("member_epoch", INT32),
    Field("heartbeat_interval_ms", INT32),
    Field("assignment", Struct(
        Field("topic_partitions", Array(_TOPIC_PARTITIONS)),
    ), nullable="0+", default=None),
)

MESSAGE = ApiMessage(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, 0, REQUEST, RESPONSE)
