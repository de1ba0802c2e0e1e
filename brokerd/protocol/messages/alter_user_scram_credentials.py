"""AlterUserScramCredentials (api key 51), version 0 (KIP-554)."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import (
    BYTES,
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
    Field("deletions", Array(Struct(
        Field("name", STRING),
        Field("mechanism", INT8),
    ))),
    Field("upsertions", Array(Struct(
        Field("name", STRING),
        Field("mechanism", INT8),
        Field("iterations", INT32),
        Field("salt", BYTES),
        Field("salted_password", BYTES),
    ))),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("results", Array(Struct(
        Field("user", STRING),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
    ))),
)

MESSAGE = ApiMessage(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0, 0, REQUEST, RESPONSE)
