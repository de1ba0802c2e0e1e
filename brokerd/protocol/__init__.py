"""Sans-I/O codec of the Kafka wire protocol: no sockets, no files.

Decoded messages are plain dicts with snake_case keys (Kafka's ``ThrottleTimeMs`` is
``throttle_time_ms``) and lists; every field of the schema is present, fields absent from
the version at their defaults.  Encoding accepts the same dicts; a missing key takes the
field's default.  Schemas live in ``messages/`` (one module per API).
"""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.codec import (
    SCHEMA_VERSIONS,
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    response_with_defaults,
)
from brokerd.protocol.error_codes import ErrorCode
from brokerd.protocol.errors import CorruptRecordError, ProtocolError, UnsupportedVersionError

__all__ = [
    "SCHEMA_VERSIONS",
    "ApiKey",
    "CorruptRecordError",
    "ErrorCode",
    "ProtocolError",
    "RequestHeader",
    "UnsupportedVersionError",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "response_with_defaults",
]
