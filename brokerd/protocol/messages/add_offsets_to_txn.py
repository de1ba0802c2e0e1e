"""AddOffsetsToTxn (api key 25), versions 0-4."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, INT32, INT64, STRING, ApiMessage, Field, Struct

REQUEST = Struct(
    Field("transactional_id", STRING),
    Field("producer_id", INT64),
    Field("producer_epoch", INT16),
    Field("group_id", STRING),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
)

MESSAGE = ApiMessage(ApiKey.ADD_OFFSETS_TO_TXN, 0, 4, 3, REQUEST, RESPONSE)
