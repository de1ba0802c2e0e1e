"""InitProducerId (api key 22), versions 0-4."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, INT32, INT64, STRING, ApiMessage, Field, Struct

REQUEST = Struct(
    Field("transactional_id", STRING, nullable="0+"),
    Field("transaction_timeout_ms", INT32),
    Field("producer_id", INT64, "3+", default=-1),
    Field("producer_epoch", INT16, "3+", default=-1),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("producer_id", INT64, default=-1),
    Field("producer_epoch", INT16),
)

MESSAGE = ApiMessage(ApiKey.INIT_PRODUCER_ID, 0, 4, 2, REQUEST, RESPONSE)
