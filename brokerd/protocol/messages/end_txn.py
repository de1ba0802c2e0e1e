"""EndTxn (api key 26), versions 0-4."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import BOOL, INT16, INT32, INT64, STRING, ApiMessage, Field, Struct

REQUEST = Struct(
    Field("transactional_id", STRING),
    Field("producer_id", INT64),
    Field("producer_epoch", INT16),
    Field("committed", BOOL),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
)

MESSAGE = ApiMessage(ApiKey.END_TXN, 0, 4, 3, REQUEST, RESPONSE)
