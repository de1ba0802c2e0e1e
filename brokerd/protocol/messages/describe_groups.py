"""DescribeGroups (api key 15), versions 0-5."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import (
    BOOL,
    BYTES,
    INT16,
    INT32,
    STRING,
    ApiMessage,
    Array,
    Field,
    Struct,
)

REQUEST = Struct(
    Field("groups", Array(STRING)),
    Field("include_authorized_operations", BOOL, "3+"),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32, "1+"),
    Field("groups", Array(Struct(
        Field("error_code", INT16),
        Field("group_id", STRING),
        Field("group_state", STRING),
        Field("protocol_type", STRING),
        Field("protocol_data", STRING),
        Field("members", Array(Struct(
            Field("member_id", STRING),
            Field("group_instance_id", STRING, "4+", nullable="4+"),
            Field("client_id", STRING),
            Field("client_host", STRING),
            Field("member_metadata", BYTES),
            Field("member_assignment", BYTES),
        ))),
        Field("authorized_operations", INT32, "3+", default=-2147483648),
    ))),
)

MESSAGE = ApiMessage(ApiKey.DESCRIBE_GROUPS, 0, 5, 5, REQUEST, RESPONSE)
