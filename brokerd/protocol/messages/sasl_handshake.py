"""SaslHandshake (api key 17), versions 0-1."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("mechanism", STRING),
)

RESPONSE = Struct(
    Field("error_code", INT16),
    Field("mechanisms", Array(STRING)),
)

MESSAGE = ApiMessage(ApiKey.SASL_HANDSHAKE, 0, 1, None, REQUEST, RESPONSE)
