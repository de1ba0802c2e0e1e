"""ListTransactions (api key 66), versions 0-1 (KIP-664; v1 adds KIP-994's duration filter)."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, INT32, INT64, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("state_filters", Array(STRING)),
    Field("producer_id_filters", Array(INT64)),
    Field("duration_filter", INT64, "1+", default=-1),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("unknown_state_filters", Array(STRING)),
    Field("transaction_states", Array(Struct(
        Field("transactional_id", STRING),
        Field("producer_id", INT64),
        Field("transaction_state", STRING),
    ))),
)

MESSAGE = ApiMessage(ApiKey.LIST_TRANSACTIONS, 0, 1, 0, REQUEST, RESPONSE)
