"""SaslAuthenticate (api key 36), versions 0-2."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import BYTES, INT16, INT64, STRING, ApiMessage, Field, Struct

REQUEST = Struct(
    Field("auth_bytes", BYTES),
)

RESPONSE = Struct(
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+"),
    Field("auth_bytes", BYTES),
    Field("session_lifetime_ms", INT64, "1+"),
)

MESSAGE = ApiMessage(ApiKey.SASL_AUTHENTICATE, 0, 2, 2, REQUEST, RESPONSE)
