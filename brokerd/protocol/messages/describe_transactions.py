"""DescribeTransactions (api key 65), version 0 (KIP-664)."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import INT16, INT32, INT64, STRING, ApiMessage, Array, Field, Struct

REQUEST = Struct(
    Field("transactional_ids", Array(STRING)),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("transaction_states", Array(Struct(
        Field("error_code", INT16),
        Field("transactional_id", STRING),
        Field("transaction_state", STRING),
        Field("transaction_timeout_ms", INT32),
        Field("transaction_start_time_ms", INT64),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("topics", Array(Struct(
            Field("topic", STRING),
            Field("partitions", Array(INT32)),
        ))),
    ))),
)

MESSAGE = ApiMessage(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0, 0, REQUEST, RESPONSE)
