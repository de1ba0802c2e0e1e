"""DescribeUserScramCredentials (api key 50), version 0 (KIP-554)."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import (
    INT8,
    INT16,
    INT32,
    STRING,
    ApiMessage,
    Array,
    Field,
    Struct,
)

REQUEST = Struct(
    Field("users", Array(Struct(
        Field("name", STRING),
    )), nullable="0+"),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+"),
    Field("results", Array(Struct(
        Field("user", STRING),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("credential_infos", Array(Struct(
            Field("mechanism", INT8),
            Field("iterations", INT32),
        ))),
    ))),
)

MESSAGE = ApiMessage(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, 0, REQUEST, RESPONSE)
